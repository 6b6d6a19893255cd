/*
 * config.c - reader.conf: the snapshot's path and the id floor, trusted
 * only from a root-owned file.
 */
#include "reader.h"

/* (A comment is a line of its own: "min_id = 1000 # x" is malformed.) */

/* Reads SCIM_READER_CONFIG_PATH: lines "key = value", blank lines and
 * "#" comments; keys cache_path (absolute) and min_id (1..4294967294).
 * The file is trusted only if root owns it and nobody else can write it:
 * these modules run in setuid programs, and whoever picks the path or the
 * floor picks every answer. Environment variables are never consulted for
 * the same reason. A missing file means the compiled defaults; a file
 * that exists but is unreadable, untrusted or malformed is an error (the
 * handle then answers SCIM_UNAVAIL, saying why), never a silent default:
 * a reader.conf at mode 0600 made user processes read another file. */
#define CONF_MAX 4096 /* bytes read of reader.conf, its NUL included */

static int parse_conf(struct reader_conf *rc, const char *cp, char *text);

int read_conf(struct reader_conf *rc)
{
	const char *cp = SCIM_READER_CONFIG_PATH;
	/* No snprintf and no large stack frame on the way of a file that is
	 * fine: a new process's first lookup comes through here, and each
	 * first touch of a libc code page or a stack page is a page fault
	 * (8-10 us each on the bench machine, issue 22). */
	_Static_assert(sizeof(SCIM_DEFAULT_CACHE_PATH) <= sizeof(rc->path),
		       "default cache path too long");
	memcpy(rc->path, SCIM_DEFAULT_CACHE_PATH, sizeof(SCIM_DEFAULT_CACHE_PATH));
	rc->min_id = SCIM_DEFAULT_MIN_ID;
	rc->err[0] = '\0';
	char *text = NULL;
	int fd = open(cp, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		snprintf(rc->err, sizeof(rc->err), "%s: cannot read: %s (it "
			 "must be root-owned, mode 0644)", cp, strerror(errno));
		return -1;
	}
	struct stat sb;
	ssize_t n = -1;
	if (!(text = malloc(CONF_MAX)))
		snprintf(rc->err, sizeof(rc->err), "%s: out of memory", cp);
	else if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || root_only(&sb) != 0)
		snprintf(rc->err, sizeof(rc->err), "%s: refused: not a regular "
			 "file owned by root and writable by root only", cp);
	else if ((n = read(fd, text, CONF_MAX)) < 0)
		snprintf(rc->err, sizeof(rc->err), "%s: cannot read: %s", cp,
			 strerror(errno));
	else if (n == (ssize_t)CONF_MAX)
		snprintf(rc->err, sizeof(rc->err), "%s: larger than %d bytes",
			 cp, CONF_MAX - 1);
	close(fd);
	if (rc->err[0]) {
		free(text);
		return -1;
	}
	text[n] = '\0';
	int r = parse_conf(rc, cp, text);
	free(text);
	return r;
}

/* p past any of the bytes of set (strspn's job: its libc code page was
 * a page fault of its own in a new process's first lookup). */
static char *skip(char *p, const char *set)
{
	while (*p && strchr(set, *p))
		p++;
	return p;
}

/* A decimal number of digits only, as min_id takes it: 0 ok, -1 not. */
static int decimal(const char *v, unsigned long long *x)
{
	*x = 0;
	if (!*v)
		return -1;
	for (; *v; v++) {
		if (*v < '0' || *v > '9' || *x > 100000000000ULL)
			return -1;
		*x = *x * 10 + (unsigned)(*v - '0');
	}
	return 0;
}

/* The lines of reader.conf (text, NUL-terminated) into rc. */
static int parse_conf(struct reader_conf *rc, const char *cp, char *text)
{
	int lineno = 0;
	for (char *line = text, *next; line; line = next) {
		lineno++;
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		line = skip(line, " \t\r");
		size_t len = strlen(line);
		while (len > 0 && strchr(" \t\r", line[len - 1]))
			line[--len] = '\0';
		if (!*line || *line == '#')
			continue;
		char *eq = strchr(line, '=');
		size_t klen = eq ? (size_t)(eq - line) : 0;
		while (klen > 0 && strchr(" \t", line[klen - 1]))
			klen--;
		char *v = eq ? skip(eq + 1, " \t") : NULL;
		if (!eq || klen == 0) {
			snprintf(rc->err, sizeof(rc->err), "%s line %d: expected "
				 "\"key = value\"", cp, lineno);
			return -1;
		}
		if (klen == 10 && !strncmp(line, "cache_path", 10)) {
			if (v[0] != '/') {
				snprintf(rc->err, sizeof(rc->err), "%s line %d: "
					 "cache_path must be an absolute path",
					 cp, lineno);
				return -1;
			}
			size_t vlen = strlen(v);
			if (vlen >= sizeof(rc->path)) {
				snprintf(rc->err, sizeof(rc->err), "%s line %d: "
					 "cache_path longer than %zu bytes", cp,
					 lineno, sizeof(rc->path) - 1);
				return -1;
			}
			memcpy(rc->path, v, vlen + 1);
		} else if (klen == 6 && !strncmp(line, "min_id", 6)) {
			unsigned long long x;
			if (decimal(v, &x) != 0 || x < 1 || x > 4294967294ULL) {
				snprintf(rc->err, sizeof(rc->err), "%s line %d: "
					 "min_id must be a number from 1 to "
					 "4294967294", cp, lineno);
				return -1;
			}
			rc->min_id = (uint32_t)x;
		} else {
			snprintf(rc->err, sizeof(rc->err), "%s line %d: unknown "
				 "key \"%.*s\" (known: cache_path, min_id)", cp,
				 lineno, (int)(klen > 40 ? 40 : klen), line);
			return -1;
		}
	}
	return 0;
}

int scim_configured_path(char *buf, size_t buflen)
{
	struct reader_conf rc;
	int r = read_conf(&rc);
	size_t len = strlen(rc.path);
	if (len + 1 > buflen)
		return -1;
	memcpy(buf, rc.path, len + 1);
	return r;
}
