package main

import (
	corebjson "encoding/json"
	corebfmt "fmt"
	corebio "io"
	corebos "os"
	corebreflect "reflect"
	corebstrconv "strconv"
	corebstrings "strings"
)

{{solution}}

func corebFail(why string) {
	corebfmt.Fprintln(corebos.Stderr, "coreb driver: "+why)
	corebos.Exit(1)
}

func corebWrite(out *corebstrings.Builder, v corebreflect.Value) {
	switch v.Kind() {
	case corebreflect.Int, corebreflect.Int8, corebreflect.Int16, corebreflect.Int32, corebreflect.Int64:
		out.WriteString(corebstrconv.FormatInt(v.Int(), 10))
	case corebreflect.Uint, corebreflect.Uint8, corebreflect.Uint16, corebreflect.Uint32, corebreflect.Uint64:
		out.WriteString(corebstrconv.FormatUint(v.Uint(), 10))
	case corebreflect.Float32, corebreflect.Float64:
		out.WriteString(corebstrconv.FormatFloat(v.Float(), 'g', -1, 64))
	case corebreflect.Bool:
		out.WriteString(corebstrconv.FormatBool(v.Bool()))
	case corebreflect.String:
		var text corebstrings.Builder
		encoder := corebjson.NewEncoder(&text)
		encoder.SetEscapeHTML(false)
		encoder.Encode(v.String())
		out.WriteString(corebstrings.TrimSuffix(text.String(), "\n"))
	case corebreflect.Slice, corebreflect.Array:
		out.WriteByte('[')
		for k := 0; k < v.Len(); k++ {
			if k > 0 {
				out.WriteByte(',')
			}
			corebWrite(out, v.Index(k))
		}
		out.WriteByte(']')
	case corebreflect.Interface, corebreflect.Ptr:
		if v.IsNil() {
			out.WriteString("null")
		} else {
			corebWrite(out, v.Elem())
		}
	default:
		bytes, err := corebjson.Marshal(v.Interface())
		if err != nil {
			corebFail(err.Error())
		}
		out.Write(bytes)
	}
}

func main() {
	input, err := corebio.ReadAll(corebos.Stdin)
	if err != nil {
		corebFail(err.Error())
	}
	lines := corebstrings.Split(string(input), "\n")
	method := corebreflect.ValueOf({{method}})
	kind := method.Type()
	if len(lines) < kind.NumIn() {
		corebFail("fewer argument lines than parameters")
	}
	args := make([]corebreflect.Value, kind.NumIn())
	for k := range args {
		value := corebreflect.New(kind.In(k))
		if err := corebjson.Unmarshal([]byte(lines[k]), value.Interface()); err != nil {
			corebFail(corebfmt.Sprintf("argument %d: %v", k, err))
		}
		args[k] = value.Elem()
	}
	results := method.Call(args)
	if len(results) != 1 {
		corebFail("{{method}} must return one value")
	}
	var out corebstrings.Builder
	corebWrite(&out, results[0])
	out.WriteByte('\n')
	corebos.Stdout.WriteString(out.String())
}
