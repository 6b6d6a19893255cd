// Package fieldcheck is test support: it checks that a comparison of a
// struct type looks at every field, so that a field added later without
// the comparison learning it fails a test instead of making two records
// that differ in it "the same".
package fieldcheck

import (
	"reflect"
	"testing"
)

// EveryField sets the fields of T one at a time on the second of two zero
// values (a string to "x", a number to 1, a bool to true, a slice or map
// to one set element, a pointer to a new zero value) and reports, as an
// error of t, each field for which same still calls the two the same. A
// field of a kind it cannot set fails t at once.
func EveryField[T any](t testing.TB, same func(a, b *T) bool) {
	t.Helper()
	typ := reflect.TypeFor[T]()
	for i := range typ.NumField() {
		var a, b T
		if err := set(reflect.ValueOf(&b).Elem().Field(i)); err != "" {
			t.Fatalf("%s.%s: %s this check cannot set", typ.Name(), typ.Field(i).Name, err)
		}
		if same(&a, &b) {
			t.Errorf("two %ss that differ in %s are called the same", typ.Name(), typ.Field(i).Name)
		}
	}
}

// set makes v differ from its zero value: "" if it did, else what it is.
func set(v reflect.Value) string {
	if !v.CanSet() {
		return "an unexported field"
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		if err := set(s.Index(0)); err != "" {
			return err
		}
		v.Set(s)
	case reflect.Map:
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		if err := set(k); err != "" {
			return err
		}
		if err := set(e); err != "" {
			return err
		}
		m := reflect.MakeMap(v.Type())
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
	default:
		return "a field of kind " + v.Kind().String()
	}
	return ""
}
