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
int read_conf(struct reader_conf *rc)
{
	const char *cp = SCIM_READER_CONFIG_PATH;
	snprintf(rc->path, sizeof(rc->path), "%s", SCIM_DEFAULT_CACHE_PATH);
	rc->min_id = SCIM_DEFAULT_MIN_ID;
	rc->err[0] = '\0';
	char text[4096];
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
	if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || root_only(&sb) != 0)
		snprintf(rc->err, sizeof(rc->err), "%s: refused: not a regular "
			 "file owned by root and writable by root only", cp);
	else if ((n = read(fd, text, sizeof(text))) < 0)
		snprintf(rc->err, sizeof(rc->err), "%s: cannot read: %s", cp,
			 strerror(errno));
	else if (n == (ssize_t)sizeof(text))
		snprintf(rc->err, sizeof(rc->err), "%s: larger than %zu bytes",
			 cp, sizeof(text) - 1);
	close(fd);
	if (rc->err[0])
		return -1;
	text[n] = '\0';
	int lineno = 0;
	for (char *line = text, *next; line; line = next) {
		lineno++;
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		line += strspn(line, " \t\r");
		size_t len = strlen(line);
		while (len > 0 && strchr(" \t\r", line[len - 1]))
			line[--len] = '\0';
		if (!*line || *line == '#')
			continue;
		char *eq = strchr(line, '=');
		size_t klen = eq ? (size_t)(eq - line) : 0;
		while (klen > 0 && strchr(" \t", line[klen - 1]))
			klen--;
		char *v = eq ? eq + 1 + strspn(eq + 1, " \t") : NULL;
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
			snprintf(rc->path, sizeof(rc->path), "%s", v);
		} else if (klen == 6 && !strncmp(line, "min_id", 6)) {
			char *end;
			errno = 0;
			unsigned long long x = strtoull(v, &end, 10);
			if (errno || end == v || *end || *v == '-' || x < 1 ||
			    x > 4294967294ULL) {
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
