package contract

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"unicode"
)

// This file holds the Router's conversions: argument bytes to Go values,
// Go results to bytes, and Go method names to the names clients call.

// checkType reports whether the Router can decode an argument of type t or
// encode a result of type t.
func checkType(t reflect.Type) error {
	switch t.Kind() {
	case reflect.Chan, reflect.Func, reflect.Complex64, reflect.Complex128, reflect.UnsafePointer:
		return fmt.Errorf("type %v is not supported: want a string, []byte, bool, number or a JSON-encodable type", t)
	case reflect.Interface:
		if t.NumMethod() != 0 {
			return fmt.Errorf("interface type %v is not supported: want a concrete type or any", t)
		}
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return checkType(t.Elem())
	case reflect.Map:
		if err := checkType(t.Key()); err != nil {
			return err
		}
		return checkType(t.Elem())
	}
	return nil
}

// isBytes reports whether t is []byte or a named type of that kind.
func isBytes(t reflect.Type) bool {
	return t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8
}

// typeName is t as error messages show it.
func typeName(t reflect.Type) string {
	if t == reflect.TypeFor[[]byte]() {
		return "[]byte"
	}
	return t.String()
}

// decodeArg decodes one argument into a value of type t.
func decodeArg(t reflect.Type, b []byte) (reflect.Value, error) {
	v := reflect.New(t).Elem()
	s := string(b)
	notA := func(what string) error {
		return fmt.Errorf("%s is not %s %s", quote(b), article(what), what)
	}
	switch k := t.Kind(); {
	case k == reflect.String:
		v.SetString(s)
	case isBytes(t):
		v.SetBytes(b)
	case k == reflect.Bool:
		x, err := strconv.ParseBool(s)
		if err != nil {
			return v, notA("bool")
		}
		v.SetBool(x)
	case v.CanInt():
		x, err := strconv.ParseInt(s, 10, t.Bits())
		if err != nil {
			return v, notA(k.String())
		}
		v.SetInt(x)
	case v.CanUint():
		x, err := strconv.ParseUint(s, 10, t.Bits())
		if err != nil {
			return v, notA(k.String())
		}
		v.SetUint(x)
	case v.CanFloat():
		x, err := strconv.ParseFloat(s, t.Bits())
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return v, notA("finite " + k.String())
		}
		v.SetFloat(x)
	default:
		if err := json.Unmarshal(b, v.Addr().Interface()); err != nil {
			return v, fmt.Errorf("%s is not JSON for %v: %v", quote(b), typeName(t), err)
		}
	}
	return v, nil
}

// encodeResult encodes a function's result.
func encodeResult(v reflect.Value) ([]byte, error) {
	if v.Kind() == reflect.Interface && !v.IsNil() {
		v = v.Elem()
	}
	if _, ok := v.Interface().(json.Marshaler); ok {
		return json.Marshal(v.Interface())
	}
	switch k := v.Kind(); {
	case k == reflect.String:
		return []byte(v.String()), nil
	case isBytes(v.Type()):
		return v.Bytes(), nil
	case k == reflect.Bool:
		return strconv.AppendBool(nil, v.Bool()), nil
	case v.CanInt():
		return strconv.AppendInt(nil, v.Int(), 10), nil
	case v.CanUint():
		return strconv.AppendUint(nil, v.Uint(), 10), nil
	case v.CanFloat():
		return strconv.AppendFloat(nil, v.Float(), 'g', -1, v.Type().Bits()), nil
	}
	return json.Marshal(v.Interface())
}

// maxQuoted bounds how much of a bad value an error message repeats.
const maxQuoted = 64

// quote renders a client-supplied value for an error message, cut short if
// it is long.
func quote(b []byte) string {
	if len(b) <= maxQuoted {
		return strconv.Quote(string(b))
	}
	return strconv.Quote(string(b[:maxQuoted])) + fmt.Sprintf("... (%d bytes)", len(b))
}

// article is the indefinite article for a type name: "an int64", "a uint64".
func article(word string) string {
	if strings.IndexByte("aeio", word[0]) >= 0 {
		return "an"
	}
	return "a"
}

// snakeCase converts a Go name to snake_case: DepositChecking →
// deposit_checking, GetID → get_id, HTTPServer → http_server.
func snakeCase(name string) string {
	rs := []rune(name)
	var sb strings.Builder
	for i, r := range rs {
		if unicode.IsUpper(r) {
			if i > 0 {
				prev := rs[i-1]
				nextLower := i+1 < len(rs) && unicode.IsLower(rs[i+1])
				if unicode.IsLower(prev) || unicode.IsDigit(prev) || (unicode.IsUpper(prev) && nextLower) {
					sb.WriteByte('_')
				}
			}
			r = unicode.ToLower(r)
		}
		sb.WriteRune(r)
	}
	return sb.String()
}

// lowerCamel lowers a Go name's leading capital or initialism:
// DepositChecking → depositChecking, ID → id, HTTPServer → httpServer.
func lowerCamel(name string) string {
	rs := []rune(name)
	n := 0
	for n < len(rs) && unicode.IsUpper(rs[n]) {
		n++
	}
	if n > 1 && n < len(rs) && !unicode.IsDigit(rs[n]) && rs[n] != '_' {
		n-- // the last capital starts the next word: HTTPServer → http|Server
	}
	for i := 0; i < n; i++ {
		rs[i] = unicode.ToLower(rs[i])
	}
	return string(rs)
}
