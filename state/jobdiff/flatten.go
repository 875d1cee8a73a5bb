package jobdiff

import (
	"fmt"
	"reflect"
)

// flatten turns v into a map of field paths to printed values, as Nomad's
// helper/flatmap does: struct fields by name ("A.B"), map keys in brackets
// ("Meta[key]"), slice elements by index ("args[0]"). With primitiveOnly the
// walk stays at the first struct's own primitive fields and maps, skipping
// nested structs, pointers, slices and interface values. filter names the
// keys dropped from the result. A nil v gives a nil map.
func flatten(v any, filter []string, primitiveOnly bool) map[string]string {
	rv := reflect.ValueOf(v)
	if !rv.IsValid() {
		return nil
	}
	out := map[string]string{}
	walk("", rv, primitiveOnly, false, out)
	for _, f := range filter {
		delete(out, f)
	}
	return out
}

func walk(prefix string, v reflect.Value, primitiveOnly, inStruct bool, out map[string]string) {
	switch v.Kind() {
	case reflect.Bool:
		out[prefix] = fmt.Sprintf("%v", v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		out[prefix] = fmt.Sprintf("%v", v.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		out[prefix] = fmt.Sprintf("%v", v.Uint())
	case reflect.Float32, reflect.Float64:
		out[prefix] = fmt.Sprintf("%v", v.Float())
	case reflect.String:
		out[prefix] = v.String()
	case reflect.Invalid:
		out[prefix] = "nil"
	case reflect.Pointer:
		if primitiveOnly && inStruct {
			return
		}
		walk(prefix, v.Elem(), primitiveOnly, inStruct, out)
	case reflect.Map:
		for _, k := range v.MapKeys() {
			key := k
			if key.Kind() == reflect.Interface {
				key = key.Elem()
			}
			if key.Kind() != reflect.String {
				continue // job maps are keyed by strings; nothing else is diffed
			}
			walk(keyPrefix(prefix, key.String()), v.MapIndex(k), primitiveOnly, inStruct, out)
		}
	case reflect.Struct:
		if primitiveOnly && inStruct {
			return
		}
		t := v.Type()
		for i := 0; i < v.NumField(); i++ {
			if !t.Field(i).IsExported() {
				continue
			}
			f := v.Field(i)
			if f.Kind() == reflect.Interface && !f.IsNil() {
				f = f.Elem()
			}
			walk(fieldPrefix(prefix, t.Field(i).Name), f, primitiveOnly, true, out)
		}
	case reflect.Interface:
		if primitiveOnly {
			return
		}
		walk(prefix, v.Elem(), primitiveOnly, inStruct, out)
	case reflect.Slice, reflect.Array:
		if primitiveOnly {
			return
		}
		if v.Kind() == reflect.Slice && v.IsNil() {
			out[prefix] = "nil"
			return
		}
		for i := 0; i < v.Len(); i++ {
			walk(fmt.Sprintf("%s[%d]", prefix, i), v.Index(i), primitiveOnly, inStruct, out)
		}
	}
	// Functions, channels and the like are not part of a job: skipped.
}

func fieldPrefix(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

func keyPrefix(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "[" + key + "]"
}
