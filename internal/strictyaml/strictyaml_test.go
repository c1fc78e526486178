package strictyaml

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"
)

// parse is Parse for tests: it fails unless the document parsed.
func parse(t *testing.T, src string) (*Decoder, *yaml.Node) {
	t.Helper()
	d, root := Parse("f.yaml", []byte(src))
	if root == nil {
		t.Fatalf("Parse(%q) problems:\n%v", src, d.Problems)
	}
	return d, root
}

func messages(ps Problems) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Error())
	}
	return out
}

func TestSuggest(t *testing.T) {
	t.Parallel()
	fields := []string{"name", "gpu", "num_gpus", "nightly", "timeout_in_minutes", "vllm", "lm_eval", "vllm_bench"}
	tests := []struct{ in, want string }{
		{"nightlly", "nightly"},
		{"Nightly", "nightly"},
		{"num-gpus", "num_gpus"},
		{"numgpus", "num_gpus"},
		{"vlm", "vllm"},
		{"lmeval", "lm_eval"},
		{"timeout_minutes", "timeout_in_minutes"},
		{"vllm_bnech", "vllm_bench"},
		{"zzz", ""},
		{"priority", ""},
		{"", ""},
	}
	for _, tt := range tests {
		if got := Suggest(tt.in, fields); got != tt.want {
			t.Errorf("Suggest(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := Suggest("x", nil); got != "" {
		t.Errorf("Suggest(x, nil) = %q, want none", got)
	}
}

func TestClosest(t *testing.T) {
	t.Parallel()
	names := []string{"minimax_m3-mi355x", "minimax_m3-nospec-mi355x", "minimax_m3-b200", "qwen3_5-mi355x", "gpt_oss_120b-h200"}
	tests := []struct {
		in   string
		n    int
		want []string
	}{
		{"minimax_m3-nospec-mi355", 3, []string{"minimax_m3-nospec-mi355x", "minimax_m3-mi355x", "minimax_m3-b200"}},
		{"nospec", 3, []string{"minimax_m3-nospec-mi355x"}},
		{"minimax_m3", 2, []string{"minimax_m3-b200", "minimax_m3-mi355x"}},
		{"llama-70b-a100", 3, nil},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(Closest(tt.in, names, tt.n), tt.want); diff != "" {
			t.Errorf("Closest(%q, %d) diff (-got +want):\n%s", tt.in, tt.n, diff)
		}
	}
}

func TestLevenshtein(t *testing.T) {
	t.Parallel()
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"a", "", 1}, {"", "abc", 3}, {"kitten", "sitting", 3},
		{"nightly", "nightlly", 1}, {"größe", "grosse", 3}, {"same", "same", 0},
	}
	for _, tt := range tests {
		if got := levenshtein(tt.a, tt.b); got != tt.want {
			t.Errorf("levenshtein(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestDescribe(t *testing.T) {
	t.Parallel()
	_, root := parse(t, `
map: {a: 1}
list: [1]
null: ~
bool: yes-no
real: true
int: 0x10
float: 1.5
str: "eight"
long: "`+strings.Repeat("x", 50)+`"
bin: !!binary aGVsbG8=
ref: &r 1
alias: *r
`)
	want := map[string]string{
		"map":   "a mapping",
		"list":  "a list",
		"null":  "null",
		"bool":  `"yes-no"`,
		"real":  "boolean true",
		"int":   "integer 0x10",
		"float": "number 1.5",
		"str":   `"eight"`,
		"long":  `"` + strings.Repeat("x", 37) + `..."`,
		"bin":   `!!binary "aGVsbG8="`,
		"ref":   "integer 1",
		"alias": "an alias",
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i].Value, root.Content[i+1]
		if got := Describe(v); got != want[k] {
			t.Errorf("Describe(%s) = %s, want %s", k, got, want[k])
		}
	}
}

func TestLocate(t *testing.T) {
	t.Parallel()
	src := `serve_args: >-
  --port 1
  --tp 2 --port
name: "é --port x"
last: --port
`
	d, root := parse(t, src)
	node := func(key string) *yaml.Node {
		for i := 0; i+1 < len(root.Content); i += 2 {
			if root.Content[i].Value == key {
				return root.Content[i+1]
			}
		}
		t.Fatalf("no key %s", key)
		return nil
	}
	tests := []struct {
		key, text string
		line, col int
	}{
		{"serve_args", "--port", 2, 3},
		{"serve_args", "--tp", 3, 3},
		{"serve_args", "2 --port", 3, 8},
		{"serve_args", "absent", 1, 13},
		{"serve_args", "", 1, 13},
		// On the node's own line the key is skipped, and columns count
		// runes, not bytes.
		{"name", "--port", 4, 10},
		{"last", "--port", 5, 7},
		{"last", "last", 5, 7},
	}
	for _, tt := range tests {
		line, col := d.Locate(node(tt.key), tt.text)
		if line != tt.line || col != tt.col {
			t.Errorf("Locate(%s, %q) = %d:%d, want %d:%d", tt.key, tt.text, line, col, tt.line, tt.col)
		}
	}
}

func TestParseProblems(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{"empty", "", []string{"f.yaml:1:1: file is empty"}},
		{"only comments", "# a\n# b\n", []string{"f.yaml:1:1: file is empty"}},
		{"two documents", "a: 1\n---\nb: 2\n", []string{"f.yaml:2:1: a file holds one YAML document; found another here (remove the '---')"}},
		{"empty second document", "a: 1\n---\n", []string{"f.yaml:2:1: a file holds one YAML document; found another here (remove the '---')"}},
		{"invalid UTF-8", "a: 1\nb: x\xc3\x28\n", []string{"f.yaml:2:5: file is not valid UTF-8"}},
		{"too large", strings.Repeat("#", MaxFileSize+1), []string{"f.yaml:1:1: file is over 1048576 bytes (1 MiB), the limit for recipes and profiles"}},
		// Syntax errors: the line of the unfinished construct (parser
		// errors) or of the offending token (scanner errors).
		{"unclosed flow sequence", "a: 1\nb: 2\nc: [1\nd: 4\n", []string{"f.yaml:3:1: YAML syntax: did not find expected ',' or ']'"}},
		{"unclosed flow mapping", "a: 1\nb: 2\nc: {x: 1\n", []string{"f.yaml:3:1: YAML syntax: did not find expected ',' or '}'"}},
		{"sequence in a mapping", "a: 1\nb: 2\n- c\n", []string{"f.yaml:3:1: YAML syntax: did not find expected key"}},
		// A mis-indented key: yaml.v3 names the line where the enclosing
		// mapping began; the problem is the key's own line.
		{"mis-indented key below a mapping's first line", "a:\n  b: 1\n  c: 2\n  e: 5\n d: 3\nf: 6\n", []string{"f.yaml:5:2: YAML syntax: did not find expected key"}},
		{"mis-indented key in a recipe", "name: x\nmodel: m\nbench:\n  num_prompts: 5\n  max_concurrency: 2\n   # ok\n rate: 3\n", []string{"f.yaml:7:2: YAML syntax: did not find expected key"}},
		{"mis-indented sequence item key", "a:\n  - x: 1\n    z: 3\n   y: 2\n", []string{"f.yaml:4:4: YAML syntax: did not find expected '-' indicator"}},
		{"mapping in a scalar", "a: 1\nb: 2\nc: d: e\n", []string{"f.yaml:3:1: YAML syntax: mapping values are not allowed in this context"}},
		{"bad escape", "a: 1\nb: \"\\q\"\n", []string{"f.yaml:2:1: YAML syntax: found unknown escape character"}},
		{"unknown anchor", "a: *nope\n", []string{"f.yaml:1:1: YAML syntax: unknown anchor 'nope' referenced"}},
	}
	for _, tt := range tests {
		d, root := Parse("f.yaml", []byte(tt.src))
		if root != nil {
			t.Errorf("%s: Parse() root = %v, want nil", tt.name, root)
		}
		if diff := cmp.Diff(messages(d.Problems), tt.want); diff != "" {
			t.Errorf("%s: Parse() problems diff (-got +want):\n%s", tt.name, diff)
		}
	}
}

func TestFields(t *testing.T) {
	t.Parallel()
	var keys []string
	for i := range 20 {
		keys = append(keys, fmt.Sprintf("k%d: %d", i, i))
	}
	src := `known: 1
<<: {known: 2}
known: 3
knwon: 4
[a]: 5
` + strings.Join(keys, "\n") + "\nk15: dup\n"
	d, root := parse(t, src)
	fields := []Field{{Name: "known"}}
	var got []string
	for i := range 20 {
		fields = append(fields, Field{Name: fmt.Sprintf("k%d", i), Decode: func(k, v *yaml.Node) {
			got = append(got, k.Value+"="+v.Value)
		}})
	}
	if !d.Fields(root, "the test", fields) {
		t.Fatal("Fields() = false on a mapping")
	}
	if len(got) != 20 || got[0] != "k0=0" || got[19] != "k19=19" {
		t.Errorf("decoded %v, want k0..k19 in order", got)
	}
	want := []string{
		"f.yaml:2:1: merge keys (<<) are not supported in the test; write the fields out",
		`f.yaml:3:1: duplicate key "known" in the test (first at line 1)`,
		`f.yaml:4:1: unknown field "knwon" in the test; did you mean "known"?`,
		"f.yaml:5:1: the test keys must be plain strings",
		// Past eight keys the duplicate check switches to a map.
		`f.yaml:26:1: duplicate key "k15" in the test (first at line 21)`,
	}
	if diff := cmp.Diff(messages(d.Problems), want); diff != "" {
		t.Errorf("Fields() problems diff (-got +want):\n%s", diff)
	}

	d, root = parse(t, "- 1\n")
	if d.Fields(root, "the test", nil) {
		t.Error("Fields(list) = true, want false")
	}
	if diff := cmp.Diff(messages(d.Problems), []string{"f.yaml:1:1: the test must be a mapping, got a list"}); diff != "" {
		t.Errorf("Fields(list) problems diff (-got +want):\n%s", diff)
	}
}

func TestScalars(t *testing.T) {
	t.Parallel()
	d, root := parse(t, `
int: 8
hex: 0x8
under: 1_000
big: 99999999999999999999
float_int: 8.0
str_int: "8"
low: 0
yes: yes
quoted: "true"
True: True
real: 0.5
inf: .inf
nan: .nan
neg: -2
nul: ~
text: "x"
plain: hello
num: 3
`)
	v := map[string]*yaml.Node{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		v[root.Content[i].Value] = root.Content[i+1]
	}
	ints := []struct {
		key string
		val int
		ok  bool
	}{
		{"int", 8, true}, {"hex", 0, false}, {"under", 0, false}, {"big", 0, false},
		{"float_int", 0, false}, {"str_int", 0, false}, {"low", 0, false},
	}
	for _, tt := range ints {
		if got, ok := d.Int(v[tt.key], tt.key, 1, 10_000); got != tt.val || ok != tt.ok {
			t.Errorf("Int(%s) = %d, %t; want %d, %t", tt.key, got, ok, tt.val, tt.ok)
		}
	}
	if b, ok := d.Bool(v["True"], "True"); !b || !ok {
		t.Errorf("Bool(True) = %t, %t; want true, true", b, ok)
	}
	for _, key := range []string{"yes", "quoted", "int"} {
		if _, ok := d.Bool(v[key], key); ok {
			t.Errorf("Bool(%s) ok, want an error", key)
		}
	}
	floats := []struct {
		key string
		val float64
		ok  bool
	}{{"real", 0.5, true}, {"int", 8, true}, {"inf", 0, false}, {"nan", 0, false}, {"neg", 0, false}, {"str_int", 0, false}}
	for _, tt := range floats {
		if got, ok := d.Float(v[tt.key], tt.key, 0, 100); got != tt.val || ok != tt.ok {
			t.Errorf("Float(%s) = %g, %t; want %g, %t", tt.key, got, ok, tt.val, tt.ok)
		}
	}
	if s, ok := d.String(v["text"], "text"); s != "x" || !ok {
		t.Errorf(`String(text) = %q, %t; want "x", true`, s, ok)
	}
	if _, ok := d.String(v["num"], "num"); ok {
		t.Error("String(num) ok, want an error: numbers are not strings")
	}
	for _, key := range []string{"num", "plain", "True"} {
		if _, ok := d.Scalar(v[key], key); !ok {
			t.Errorf("Scalar(%s) failed", key)
		}
	}
	if _, ok := d.Scalar(v["nul"], "nul"); ok {
		t.Error("Scalar(nul) ok, want an error")
	}
	want := []string{
		"f.yaml:3:6: integer 0x8 is not in plain decimal form: YAML readers disagree on leading zeros, '+', '_', 0x, 0o and 0b (010 is 8 to some and 10 to others); write decimal digits, or quote it to mean text",
		"f.yaml:4:8: integer 1_000 is not in plain decimal form: YAML readers disagree on leading zeros, '+', '_', 0x, 0o and 0b (010 is 8 to some and 10 to others); write decimal digits, or quote it to mean text",
		"f.yaml:5:6: big must be an integer, got number 99999999999999999999",
		"f.yaml:6:12: float_int must be an integer, got number 8.0",
		`f.yaml:7:10: str_int must be an integer, got "8"`,
		"f.yaml:8:6: low must be between 1 and 10000, got 0",
		`f.yaml:9:6: yes must be true or false, got "yes"`,
		`f.yaml:10:9: quoted must be true or false, got "true"`,
		"f.yaml:2:6: int must be true or false, got integer 8",
		"f.yaml:13:6: inf: \".inf\" is not a finite number",
		"f.yaml:14:6: nan: \".nan\" is not a finite number",
		"f.yaml:15:6: neg must be between 0 and 100, got -2",
		`f.yaml:7:10: str_int must be a number, got "8"`,
		"f.yaml:19:6: num must be a string, got integer 3",
		"f.yaml:16:6: nul must be a string, number or boolean, got null",
	}
	if diff := cmp.Diff(messages(d.Problems), want); diff != "" {
		t.Errorf("problems diff (-got +want):\n%s", diff)
	}
}

// TestPlainForms holds the forms YAML readers disagree on: each is an error
// at the value, whatever field it is in, and reported once.
func TestPlainForms(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src  string
		want []string // messages; none for a plain form
	}{
		{"a: 8", nil},
		{"a: -3", nil},
		{"a: 0", nil},
		{"a: 0.5", nil},
		{"a: .5", nil},
		{"a: 1e3", nil},
		{"a: True", nil},
		{`a: "010"`, nil},
		{"a: 010", []string{"f.yaml:1:4: integer 010 is not in plain decimal form"}},
		{"a: 0x1F", []string{"f.yaml:1:4: integer 0x1F is not in plain decimal form"}},
		{"a: 0o17", []string{"f.yaml:1:4: integer 0o17 is not in plain decimal form"}},
		{"a: 0b101", []string{"f.yaml:1:4: integer 0b101 is not in plain decimal form"}},
		{"a: 1_000", []string{"f.yaml:1:4: integer 1_000 is not in plain decimal form"}},
		{"a: +8", []string{"f.yaml:1:4: integer +8 is not in plain decimal form"}},
		{"a: 1_0.5", []string{"f.yaml:1:4: number 1_0.5 is not in plain decimal form"}},
		{"a: !!bool yes", []string{`f.yaml:1:4: explicit YAML tag !!bool on "yes": tags are not accepted`}},
		{`a: !!int "8"`, []string{`f.yaml:1:4: explicit YAML tag !!int on "8": tags are not accepted`}},
		{"a: !!str x", []string{`f.yaml:1:4: explicit YAML tag !!str on "x": tags are not accepted`}},
		{"a: [1, 010]", []string{"f.yaml:1:8: integer 010 is not in plain decimal form"}},
		{"a: &x 010\nb: *x\nc: *x", []string{"f.yaml:1:4: integer 010 is not in plain decimal form"}},
	}
	for _, tt := range tests {
		d, root := Parse("f.yaml", []byte(tt.src))
		if root == nil {
			t.Fatalf("Parse(%q) problems = %v", tt.src, d.Problems)
		}
		// Every value is reached twice, as a decoder handing a value on does.
		d.Pairs(root, "doc", func(_, v *yaml.Node) {
			d.Items(v, "a", func(int, *yaml.Node) {})
			d.Resolve(v)
			d.Int(v, "a", -10, 10)
		})
		var got []string
		for _, m := range messages(d.Problems) {
			if strings.Contains(m, "not in plain") || strings.Contains(m, "tags are not accepted") {
				got = append(got, m)
			}
		}
		if len(got) != len(tt.want) {
			t.Errorf("Parse(%q) form problems = %q, want %q", tt.src, got, tt.want)
			continue
		}
		for i := range got {
			if !strings.HasPrefix(got[i], tt.want[i]) {
				t.Errorf("Parse(%q) problem %d = %q, want it to start %q", tt.src, i, got[i], tt.want[i])
			}
		}
	}
}

func TestResolveBound(t *testing.T) {
	t.Parallel()
	// Ten aliases of a list of MaxNodes/5 items: twice the bound.
	src := "a: &a [" + strings.Repeat("1,", MaxNodes/5) + "1]\nb: [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
	d, root := parse(t, src)
	var items int
	d.Pairs(root, "the test", func(k, v *yaml.Node) {
		if k.Value != "b" {
			return
		}
		d.Items(v, "list", func(_ int, item *yaml.Node) {
			d.Items(item, "inner", func(int, *yaml.Node) { items++ })
		})
	})
	if items >= MaxNodes {
		t.Errorf("visited %d items, want fewer than %d", items, MaxNodes)
	}
	// What would be reported after the bound is dropped as noise.
	d.Errorf(root, "noise after the bound")
	// The node that passes the bound is an item of the anchored list.
	if len(d.Problems) != 1 || d.Problems[0].Line != 1 ||
		d.Problems[0].Msg != fmt.Sprintf("document expands to more than %d nodes (aliases?); refusing to read further", MaxNodes) {
		t.Errorf("problems = %v, want only the bound, on line 1", d.Problems)
	}
}

func TestProblems(t *testing.T) {
	t.Parallel()
	ps := Problems{
		{File: "b.yaml", Line: 1, Col: 1, Msg: "b"},
		{File: "a.yaml", Line: 3, Col: 2, Msg: "late", Warning: true},
		{File: "a.yaml", Line: 3, Col: 1, Msg: "early"},
		{File: "a.yaml", Line: 1, Col: 9, Msg: "first"},
	}
	ps.Sort()
	want := []string{
		"a.yaml:1:9: first",
		"a.yaml:3:1: early",
		"a.yaml:3:2: warning: late",
		"b.yaml:1:1: b",
	}
	if diff := cmp.Diff(messages(ps), want); diff != "" {
		t.Errorf("sorted problems diff (-got +want):\n%s", diff)
	}
	if got := ps.Error(); got != strings.Join(want, "\n") {
		t.Errorf("Problems.Error() = %q", got)
	}
	if len(ps.Errors()) != 3 || len(ps.Warnings()) != 1 || ps.Warnings()[0].Msg != "late" {
		t.Errorf("Errors() = %v, Warnings() = %v", ps.Errors(), ps.Warnings())
	}
	var err error = ps
	if !errors.Is(err, ErrInvalid) {
		t.Error("errors.Is(problems, ErrInvalid) = false")
	}
}
