// The passwd and group rows syncd must publish for the directory
// server.mjs serves (its JSON lines on stdin), with the default
// [user_names] and [group_names] rules written again here, independently
// of syncd/names: lower case; a userName's part after the last "@" cut;
// accents dropped (NFD, combining marks removed); each space and each
// other character outside [a-z0-9_.-] becomes "_". Users whose login names
// collide (none holds one yet, none is its own) are left out, as are their
// memberships. Writes want.passwd and want.group into the directory given.
import {readFileSync, writeFileSync} from "node:fs";

const out = process.argv[2];
const lines = readFileSync(0, "utf8").trim().split("\n").map(l => JSON.parse(l));
const fold = s => s.normalize("NFD").replace(/\p{Mn}/gu, "").toLowerCase().replace(/ /g, "_").replace(/[^a-z0-9_.-]/g, "_");
const posix = "urn:ietf:params:scim:schemas:extension:posix:2.0:User";
const users = lines.filter(l => l.kind === "user").map(u => {
    const at = u.userName.lastIndexOf("@");
    return {...u, login: fold(at >= 0 ? u.userName.slice(0, at) : u.userName)};
});
const count = {};
for (const u of users) count[u.login] = (count[u.login] ?? 0) + 1;
const published = users.filter(u => count[u.login] === 1);
const byID = Object.fromEntries(published.map(u => [u.id, u.login]));
const passwd = published.map(u => {
    const p = u[posix];
    return `${u.login}:*:${p.uidNumber}:${p.gidNumber}:${p.gecos ?? ""}:/home/${u.login}:${p.loginShell ?? "/bin/bash"}`;
});
const group = published.map(u => `${u.login}:*:${u[posix].gidNumber}:`);
for (const g of lines.filter(l => l.kind === "group")) {
    const members = g.members.map(m => byID[m.value]).filter(Boolean).sort();
    group.push(`${fold(g.displayName)}:*:${g["urn:ietf:params:scim:schemas:extension:posix:2.0:Group"].gidNumber}:${members.join(",")}`);
}
writeFileSync(`${out}/want.passwd`, passwd.sort().join("\n") + "\n");
writeFileSync(`${out}/want.group`, group.sort().join("\n") + "\n");
