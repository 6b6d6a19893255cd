package scimserver

import "strings"

// URNs of the SCIM messages and core schemas (RFC 7643, RFC 7644).
const (
	URNUser           = "urn:ietf:params:scim:schemas:core:2.0:User"
	URNGroup          = "urn:ietf:params:scim:schemas:core:2.0:Group"
	URNListResponse   = "urn:ietf:params:scim:api:messages:2.0:ListResponse"
	URNSearchRequest  = "urn:ietf:params:scim:api:messages:2.0:SearchRequest"
	URNError          = "urn:ietf:params:scim:api:messages:2.0:Error"
	URNServiceConfig  = "urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig"
	URNResourceType   = "urn:ietf:params:scim:schemas:core:2.0:ResourceType"
	URNSchema         = "urn:ietf:params:scim:schemas:core:2.0:Schema"
	returnedAlways    = "always"
	returnedDefault   = "default"
	returnedRequest   = "request"
	returnedNever     = "never"
	typeString        = "string"
	typeInteger       = "integer"
	typeBoolean       = "boolean"
	typeDateTime      = "dateTime"
	typeComplex       = "complex"
	typeReference     = "reference"
	mutabilityRO      = "readOnly"
	mutabilityRW      = "readWrite"
	mutabilityImmut   = "immutable"
	mutabilityWO      = "writeOnly"
	uniquenessNone    = "none"
	uniquenessServer  = "server"
	uniquenessGlobal  = "global"
	resourceTypeUser  = "User"
	resourceTypeGroup = "Group"
)

// attrDef is an RFC 7643 §7 attribute definition. The same definitions
// are served at /Schemas and drive attribute selection and filtering, so
// what the server advertises is what it does.
type attrDef struct {
	Name            string    `json:"name"`
	Type            string    `json:"type"`
	MultiValued     bool      `json:"multiValued"`
	Description     string    `json:"description,omitempty"`
	Required        bool      `json:"required"`
	CaseExact       bool      `json:"caseExact"`
	Mutability      string    `json:"mutability"`
	Returned        string    `json:"returned"`
	Uniqueness      string    `json:"uniqueness"`
	CanonicalValues []string  `json:"canonicalValues,omitempty"`
	ReferenceTypes  []string  `json:"referenceTypes,omitempty"`
	SubAttributes   []attrDef `json:"subAttributes,omitempty"`
}

// schemaDef is one schema as /Schemas serves it.
type schemaDef struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	Description string    `json:"description"`
	Attributes  []attrDef `json:"attributes"`
}

func str(name string, returned string) attrDef {
	return attrDef{Name: name, Type: typeString, Mutability: mutabilityRW, Returned: returned, Uniqueness: uniquenessNone}
}

func (a attrDef) exact() attrDef         { a.CaseExact = true; return a }
func (a attrDef) required() attrDef      { a.Required = true; return a }
func (a attrDef) multi() attrDef         { a.MultiValued = true; return a }
func (a attrDef) readOnly() attrDef      { a.Mutability = mutabilityRO; return a }
func (a attrDef) typed(t string) attrDef { a.Type = t; return a }
func (a attrDef) unique() attrDef        { a.Uniqueness = uniquenessServer; return a }
func (a attrDef) sub(s ...attrDef) attrDef {
	a.Type = typeComplex
	a.SubAttributes = s
	return a
}

// commonAttrs are RFC 7643 §3.1 attributes every resource has; they are in
// no schema's attribute list but select and filter like the others.
func commonAttrs() []attrDef {
	return []attrDef{
		str("id", returnedAlways).exact().readOnly().unique(),
		str("externalId", returnedDefault).exact(),
		str("meta", returnedDefault).readOnly().sub(
			str("resourceType", returnedDefault).exact().readOnly(),
			str("created", returnedDefault).typed(typeDateTime).readOnly(),
			str("lastModified", returnedDefault).typed(typeDateTime).readOnly(),
			str("location", returnedDefault).typed(typeReference).exact().readOnly(),
			str("version", returnedDefault).exact().readOnly(),
		),
	}
}

func userSchema() schemaDef {
	return schemaDef{
		ID: URNUser, Name: "User", Description: "User Account",
		Attributes: []attrDef{
			str("userName", returnedDefault).required().unique(),
			str("name", returnedDefault).sub(
				str("formatted", returnedDefault),
				str("familyName", returnedDefault),
				str("givenName", returnedDefault),
				str("middleName", returnedDefault),
			),
			str("displayName", returnedDefault),
			str("active", returnedDefault).typed(typeBoolean),
			func() attrDef { a := str("password", returnedNever); a.Mutability = mutabilityWO; return a }(),
			str("emails", returnedDefault).multi().sub(
				str("value", returnedDefault),
				str("display", returnedDefault),
				str("type", returnedDefault),
				str("primary", returnedDefault).typed(typeBoolean),
			),
			userGroupsAttr(),
		},
	}
}

// userGroupsAttr is the User's read-only "groups" (RFC 7643 section 4.1.2).
func userGroupsAttr() attrDef {
	ref := str("$ref", returnedDefault).typed(typeReference).readOnly()
	ref.ReferenceTypes = []string{"User", "Group"}
	typ := str("type", returnedDefault).readOnly()
	typ.CanonicalValues = []string{"direct", "indirect"}
	return str("groups", returnedDefault).multi().readOnly().sub(
		str("value", returnedDefault).readOnly(), ref, str("display", returnedDefault).readOnly(), typ)
}

func groupSchema() schemaDef {
	ref := str("$ref", returnedDefault).typed(typeReference).exact()
	ref.Mutability = mutabilityImmut
	ref.ReferenceTypes = []string{"User", "Group"}
	value := str("value", returnedDefault).exact()
	value.Mutability = mutabilityImmut
	typ := str("type", returnedDefault)
	typ.Mutability = mutabilityImmut
	typ.CanonicalValues = []string{"User", "Group"}
	return schemaDef{
		ID: URNGroup, Name: "Group", Description: "Group",
		Attributes: []attrDef{
			str("displayName", returnedDefault).required(),
			str("members", returnedDefault).multi().sub(value, str("display", returnedDefault), ref, typ),
		},
	}
}

// userExtSchema is the POSIX user extension; returned is "default", or
// "request" for Oracle-style servers that hide it unless it is named.
func userExtSchema(f Flavor, returned string) schemaDef {
	return schemaDef{
		ID: f.UserURN, Name: "PosixUser", Description: "POSIX account attributes (" + f.Name + " flavour)",
		Attributes: []attrDef{
			str(f.UID, returned).typed(typeInteger).unique(),
			str(f.GID, returned).typed(typeInteger),
			str(f.Home, returned).exact(),
			str(f.Shell, returned).exact(),
			str(f.GECOS, returned),
			str(f.SSHKeys, returned).exact().multi(),
		},
	}
}

func groupExtSchema(f Flavor, returned string) schemaDef {
	return schemaDef{
		ID: f.GroupURN, Name: "PosixGroup", Description: "POSIX group attributes (" + f.Name + " flavour)",
		Attributes: []attrDef{str(f.GroupGID, returned).typed(typeInteger).unique()},
	}
}

// resourceSchema is everything known about one resource type: its core
// schema, its extension, and lookup tables for attribute paths.
type resourceSchema struct {
	name     string // "User" or "Group"
	endpoint string // "/Users"
	core     schemaDef
	ext      schemaDef
	// top maps a lower-cased top-level attribute name (or the extension
	// URN) to its definition; the extension is a complex attribute here.
	top map[string]*attrDef
	// sub is set only on the throwaway schema a value filter
	// (emails[type eq "work"]) evaluates its inner filter with.
	sub *attrDef
}

func newResourceSchema(name, endpoint string, core, ext schemaDef) *resourceSchema {
	rs := &resourceSchema{name: name, endpoint: endpoint, core: core, ext: ext, top: map[string]*attrDef{}}
	for _, a := range append(commonAttrs(), core.Attributes...) {
		rs.top[strings.ToLower(a.Name)] = &a
	}
	// The extension's own "returned" is that of its attributes: a
	// request-only extension is left out of default responses whole.
	returned := returnedDefault
	if len(ext.Attributes) > 0 {
		returned = ext.Attributes[0].Returned
	}
	e := str(ext.ID, returned).sub(ext.Attributes...)
	rs.top[strings.ToLower(ext.ID)] = &e
	return rs
}

// attrPath is a parsed attribute path: a top-level key (lower case; the
// extension URN for extension attributes) and an optional sub-attribute.
type attrPath struct {
	top, sub string
}

// parsePath resolves "userName", "name.givenName", "urn:...:User:userName",
// "urn:...posix:2.0:User:uidNumber" and the bare extension URN. ok is false
// for paths no schema defines.
func (rs *resourceSchema) parsePath(p string) (attrPath, bool) {
	lp := strings.ToLower(strings.TrimSpace(p))
	if strings.HasPrefix(lp, "urn:") {
		ext := strings.ToLower(rs.ext.ID)
		core := strings.ToLower(rs.core.ID)
		switch {
		case lp == ext:
			return attrPath{top: ext}, true
		case strings.HasPrefix(lp, ext+":"):
			return rs.check(attrPath{top: ext, sub: lp[len(ext)+1:]})
		case strings.HasPrefix(lp, core+":"):
			lp = lp[len(core)+1:]
		default:
			// Another extension's attribute ("urn:...:User:homeQuota"):
			// only Extra can hold it (project returns it when named).
			i := strings.LastIndexByte(lp, ':')
			return attrPath{top: lp[:i], sub: lp[i+1:]}, true
		}
	}
	top, sub, _ := strings.Cut(lp, ".")
	return rs.check(attrPath{top: top, sub: sub})
}

func (rs *resourceSchema) check(p attrPath) (attrPath, bool) {
	d := rs.top[p.top]
	if d == nil {
		return p, false
	}
	if p.sub != "" && d.subDef(p.sub) == nil {
		return p, false
	}
	return p, true
}

// def returns the definition of the attribute at p (the sub-attribute when
// p has one).
func (rs *resourceSchema) def(p attrPath) *attrDef {
	d := rs.top[p.top]
	if d == nil || p.sub == "" {
		return d
	}
	return d.subDef(p.sub)
}

func (a *attrDef) subDef(name string) *attrDef {
	for i := range a.SubAttributes {
		if strings.EqualFold(a.SubAttributes[i].Name, name) {
			return &a.SubAttributes[i]
		}
	}
	return nil
}
