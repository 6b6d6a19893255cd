// An independent SCIM 2.0 server for scimbridge's tests (issue 20): the
// protocol (routing, /Schemas, /ServiceProviderConfig, list responses,
// paging, sorting, attributes= and excludedAttributes, filter parsing and
// matching, PATCH, errors) is SCIMMY's and scimmy-routers', which this
// project did not write. This file only holds the directory, in memory,
// shaped as identity providers publish it: userNames as emails and UPNs
// in mixed case, each user's gid equal to their uid with no group for it,
// group names with spaces and accents, a POSIX extension.
//
//   node server.mjs --token-file F --addr-file F [--users N]
//
// Listens on 127.0.0.1 (a free port, written to --addr-file), serves
// /scim/v2 to the bearer token in --token-file, and prints the directory
// it serves as JSON lines on stdout ({"kind":"user",...}) so a test can
// compute what it expects from what is served.
import express from "express";
import SCIMMY from "scimmy";
import SCIMMYRouters from "scimmy-routers";
import {readFileSync, writeFileSync} from "node:fs";

const arg = (name, def) => {
    const i = process.argv.indexOf("--" + name);
    return i > 0 ? process.argv[i + 1] : def;
};
const token = readFileSync(arg("token-file"), "utf8").trim();
const nUsers = Number(arg("users", "300"));

const {Attribute, SchemaDefinition} = SCIMMY.Types;
const posixUser = new SchemaDefinition("PosixUser", "urn:ietf:params:scim:schemas:extension:posix:2.0:User", "POSIX account", [
    new Attribute("integer", "uidNumber"),
    new Attribute("integer", "gidNumber"),
    new Attribute("string", "homeDirectory"),
    new Attribute("string", "loginShell"),
    new Attribute("string", "gecos"),
    new Attribute("string", "sshPublicKey", {multiValued: true}),
]);
const posixGroup = new SchemaDefinition("PosixGroup", "urn:ietf:params:scim:schemas:extension:posix:2.0:Group", "POSIX group", [
    new Attribute("integer", "gidNumber"),
]);
SCIMMY.Schemas.User.extend(posixUser, false);
SCIMMY.Schemas.Group.extend(posixGroup, false);

// The directory. Names as the IdPs' SCIM docs show them: Okta logins and
// AWS IAM Identity Center userNames are emails, Entra sends the UPN (a
// guest's carries #EXT#), authentik a free-form username.
const first = ["alice", "bob", "carol", "dan", "erin", "frank", "grace", "heidi", "ivan", "judy", "mallory", "niaj", "olivia", "peggy", "rupert", "sybil", "trent", "victor", "walter", "yolanda"];
const last = ["smith", "jones", "garcía", "o'brien", "müller", "nguyen", "kowalski", "dubois", "rossi", "tanaka"];
const now = new Date("2026-01-01T00:00:00Z").toISOString();
const users = [];
for (let i = 0; i < nUsers; i++) {
    const f = first[i % first.length], l = last[Math.floor(i / first.length) % last.length], n = Math.floor(i / (first.length * last.length));
    const local = `${f}.${l}${n || ""}`;
    let userName;
    switch (i % 4) {
    case 0: userName = `${local}@example.com`; break;                                        // Okta login, AWS
    case 1: userName = `${local[0].toUpperCase()}${local.slice(1)}@Contoso.onmicrosoft.com`; break; // Entra UPN
    case 2: userName = `${local}@research.example.org`; break;                              // a second domain
    default: userName = `${f}${l.length}${i}`; break;                                         // authentik username
    }
    const uid = 20000 + i;
    users.push({
        id: `u-${String(i).padStart(5, "0")}`, userName, active: i % 17 !== 5,
        displayName: `${f} ${l}`, name: {givenName: f, familyName: l},
        emails: [{value: `${local}@example.com`, type: "work", primary: true}],
        "urn:ietf:params:scim:schemas:extension:posix:2.0:User": {uidNumber: uid, gidNumber: uid, loginShell: "/bin/bash"},
        meta: {created: now, lastModified: now},
    });
}
// An Entra guest and two people with one local part at two domains.
users.push({id: "u-guest", userName: "zoe_gmail.com#EXT#@contoso.onmicrosoft.com", active: true, displayName: "Zoe Guest",
    "urn:ietf:params:scim:schemas:extension:posix:2.0:User": {uidNumber: 29001, gidNumber: 29001}, meta: {created: now, lastModified: now}});
users.push({id: "u-twin-a", userName: "quinn@a.example", active: true, displayName: "Quinn A",
    "urn:ietf:params:scim:schemas:extension:posix:2.0:User": {uidNumber: 29002, gidNumber: 29002}, meta: {created: now, lastModified: now}});
users.push({id: "u-twin-b", userName: "quinn@b.example", active: true, displayName: "Quinn B",
    "urn:ietf:params:scim:schemas:extension:posix:2.0:User": {uidNumber: 29003, gidNumber: 29003}, meta: {created: now, lastModified: now}});
const groupNames = ["Sales Team EU", "HPC Users", "équipe recherche", "Domain Users"];
const groups = groupNames.map((displayName, g) => ({
    id: `g-${g}`, displayName,
    members: users.filter((u, i) => i % groupNames.length === g).map(u => ({value: u.id, display: u.displayName, type: "User"})),
    "urn:ietf:params:scim:schemas:extension:posix:2.0:Group": {gidNumber: 30000 + g},
    meta: {created: now, lastModified: now},
}));

const match = (resource, list) => {
    if (resource.id) return list.find(r => r.id === resource.id);
    return resource.filter ? resource.filter.match(list) : list;
};
SCIMMY.Resources.declare(SCIMMY.Resources.User)
    .egress(resource => match(resource, users))
    .ingress(() => { throw new SCIMMY.Types.Error(501, null, "read-only directory"); })
    .degress(() => { throw new SCIMMY.Types.Error(501, null, "read-only directory"); });
SCIMMY.Resources.declare(SCIMMY.Resources.Group)
    .egress(resource => match(resource, groups))
    .ingress(() => { throw new SCIMMY.Types.Error(501, null, "read-only directory"); })
    .degress(() => { throw new SCIMMY.Types.Error(501, null, "read-only directory"); });

const app = express();
app.use("/scim/v2", new SCIMMYRouters({
    type: "bearer",
    handler: request => {
        if (request.header("Authorization") !== `Bearer ${token}`) throw new Error("bad token");
        return "scimbridge-test";
    },
}));
const server = app.listen(0, "127.0.0.1", () => {
    for (const u of users) console.log(JSON.stringify({kind: "user", ...u}));
    for (const g of groups) console.log(JSON.stringify({kind: "group", ...g}));
    writeFileSync(arg("addr-file"), `127.0.0.1:${server.address().port}\n`);
});
