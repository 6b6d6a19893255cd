package source

import (
	"reflect"
	"testing"
)

// Every field of User and Group counts: a record changed in any one of
// them is not the same (a field added later without SameUser/SameGroup
// learning it fails here).
func TestSameCoversEveryField(t *testing.T) {
	for _, c := range []struct {
		v    any
		same func(a, b reflect.Value) bool
	}{
		{User{}, func(a, b reflect.Value) bool {
			x, y := a.Interface().(User), b.Interface().(User)
			return SameUser(&x, &y)
		}},
		{Group{}, func(a, b reflect.Value) bool {
			x, y := a.Interface().(Group), b.Interface().(Group)
			return SameGroup(&x, &y)
		}},
	} {
		typ := reflect.TypeOf(c.v)
		for i := range typ.NumField() {
			a, b := reflect.New(typ).Elem(), reflect.New(typ).Elem()
			f := b.Field(i)
			switch f.Kind() {
			case reflect.String:
				f.SetString("x")
			case reflect.Slice:
				f.Set(reflect.ValueOf([]string{"x"}))
			case reflect.Map:
				f.Set(reflect.ValueOf(map[string]string{"x": "y"}))
			case reflect.Pointer:
				f.Set(reflect.New(f.Type().Elem()))
			default:
				t.Fatalf("%s.%s: a field of kind %s this test cannot set", typ.Name(), typ.Field(i).Name, f.Kind())
			}
			if c.same(a, b) {
				t.Errorf("Same%s calls two %ss the same that differ in %s", typ.Name(), typ.Name(), typ.Field(i).Name)
			}
		}
	}
	// nil and empty are told apart (the explain record encodes null and []).
	if SameUser(&User{SSHKeys: nil}, &User{SSHKeys: []string{}}) {
		t.Error("SameUser calls nil and empty key lists the same")
	}
}
