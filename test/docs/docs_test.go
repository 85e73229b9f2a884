// Package docs checks that README.md and docs/ stay true to the code: the
// layout table names every package, the configuration page every variable,
// every requirement anchor cited anywhere exists, every relative link and
// anchor resolves, and every make target and mcpgate command named exists.
package docs

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/mcpgate/mcpgate/gateway/config"
)

// root is the module's root, relative to this package.
const root = "../.."

// read returns the file at path (relative to the module root).
func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// docPages lists README.md and every Markdown page of docs/, relative to
// the module root.
func docPages(t *testing.T) []string {
	t.Helper()
	pages := []string{"README.md", "CONTRIBUTING.md"}
	m, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range m {
		rel, _ := filepath.Rel(root, p)
		pages = append(pages, filepath.ToSlash(rel))
	}
	return pages
}

// skipDir says whether a walk of the module leaves dir out: hidden
// folders, testdata, node_modules and nested modules are not packages of
// this module.
func skipDir(path string, d fs.DirEntry) bool {
	name := d.Name()
	if path == root {
		return false
	}
	if strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules" || name == "bin" {
		return true
	}
	_, err := os.Stat(filepath.Join(path, "go.mod"))
	return err == nil
}

// walkFiles calls fn with the path of every file of the module (the
// folders skipDir leaves out aside); an error from fn fails the test.
func walkFiles(t *testing.T, fn func(path string) error) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if skipDir(path, d) {
				return filepath.SkipDir
			}
			return nil
		}
		return fn(path)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// goPackageDirs returns every folder of the module that holds a .go file,
// relative to the module root, "." for the root itself.
func goPackageDirs(t *testing.T) []string {
	t.Helper()
	seen := map[string]bool{}
	walkFiles(t, func(path string) error {
		if strings.HasSuffix(path, ".go") {
			rel, _ := filepath.Rel(root, filepath.Dir(path))
			seen[filepath.ToSlash(rel)] = true
		}
		return nil
	})
	var dirs []string
	for d := range seen {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	return dirs
}

// section returns the text of the section that starts at the heading line
// heading, up to the next heading of the same or a higher level.
func section(t *testing.T, page, heading string) string {
	t.Helper()
	text := read(t, page)
	i := strings.Index(text, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("%s has no heading %q", page, heading)
	}
	rest := text[i+len(heading)+2:]
	level := strings.Count(strings.Fields(heading)[0], "#")
	for _, m := range regexp.MustCompile(`(?m)^(#+) `).FindAllStringSubmatchIndex(rest, -1) {
		if m[3]-m[2] <= level {
			return rest[:m[0]]
		}
	}
	return rest
}

var codeSpan = regexp.MustCompile("`([^`]+)`")

// TestLayoutTableNamesEveryPackage: the layout table of architecture.md
// names every Go package folder of the module, and every folder it names
// exists.
func TestLayoutTableNamesEveryPackage(t *testing.T) {
	named := map[string]bool{}
	for _, line := range strings.Split(section(t, "docs/architecture.md", "## Layout"), "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		first := strings.Split(line, "|")[1]
		for _, m := range codeSpan.FindAllStringSubmatch(first, -1) {
			named[m[1]] = true
		}
	}
	if len(named) == 0 {
		t.Fatal("architecture.md's layout table names no folder")
	}
	for dir := range named {
		if fi, err := os.Stat(filepath.Join(root, dir)); err != nil || !fi.IsDir() {
			t.Errorf("architecture.md's layout table names %s, which is not a folder of the module", dir)
		}
	}
	for _, dir := range goPackageDirs(t) {
		if dir == "." {
			continue
		}
		if !named[dir] {
			t.Errorf("architecture.md's layout table does not name the package folder %s: add a row for it", dir)
		}
	}
}

// configVariables returns the environment variables gateway/config reads:
// those config.Load asks for from an environment that records each name,
// and those the package's source names (gateway/config exports no table
// of them).
func configVariables(t *testing.T) []string {
	t.Helper()
	seen := map[string]bool{}
	// The error is expected (no JWT key); every variable is read first.
	_, _ = config.Load(func(name string) string { seen[name] = true; return "" })
	// A variable read only when another is set escapes the recording
	// above; the package's own source names it as a string literal.
	files, err := filepath.Glob(filepath.Join(root, "gateway", "config", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		for _, m := range quotedEnvName.FindAllStringSubmatch(read(t, strings.TrimPrefix(f, root+"/")), -1) {
			seen[m[1]] = true
		}
	}
	var names []string
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) < 10 {
		t.Fatalf("config.Load read only %d variables: %v", len(names), names)
	}
	return names
}

var quotedEnvName = regexp.MustCompile(`"((?:MCPGATE|SUPACLOUD|AGENT_MCP)_[A-Z0-9_]*[A-Z0-9])"`)

var envName = regexp.MustCompile(`\b(?:MCPGATE|SUPACLOUD|AGENT_MCP)_[A-Z0-9_]*[A-Z0-9]\b`)

// TestConfigurationNamesEveryVariable: configuration.md names every
// variable gateway/config reads, and no variable it does not (the test
// variables of the PostgreSQL tests aside, which the gateway never reads).
func TestConfigurationNamesEveryVariable(t *testing.T) {
	vars := configVariables(t)
	text := read(t, "docs/configuration.md")
	named := map[string]bool{}
	for _, n := range envName.FindAllString(text, -1) {
		named[n] = true
	}
	for _, v := range vars {
		if !named[v] {
			t.Errorf("docs/configuration.md does not describe %s, which gateway/config reads", v)
		}
		delete(named, v)
	}
	for n := range named {
		if n == "MCPGATE_TEST_DATABASE_URL" || n == "MCPGATE_TOKEN" {
			continue
		}
		t.Errorf("docs/configuration.md names %s, which gateway/config does not read", n)
	}
}

var requirementCite = regexp.MustCompile(`requirements\.md#([A-Za-z0-9_-]+)`)

// TestRequirementAnchorsCitedExist: every requirements.md#<anchor> cited in
// a .go, .rego or .md file of the module is an anchor of
// docs/requirements.md.
func TestRequirementAnchorsCitedExist(t *testing.T) {
	anchors := pageAnchors(read(t, "docs/requirements.md"))
	if len(anchors) < 20 {
		t.Fatalf("docs/requirements.md has only %d anchors", len(anchors))
	}
	walkFiles(t, func(path string) error {
		switch filepath.Ext(path) {
		case ".go", ".rego", ".md":
		default:
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		sc := bufio.NewScanner(strings.NewReader(string(b)))
		sc.Buffer(nil, 1<<20)
		for line := 1; sc.Scan(); line++ {
			for _, m := range requirementCite.FindAllStringSubmatch(sc.Text(), -1) {
				if !anchors[m[1]] {
					rel, _ := filepath.Rel(root, path)
					t.Errorf("%s:%d cites requirements.md#%s, which docs/requirements.md lacks", rel, line, m[1])
				}
			}
		}
		return sc.Err()
	})
}

// outsideCite matches a citation of a document the repository does not
// carry (the design document's sections, the source documents by number,
// the folder beside the clone that holds them): the repository cites its
// own docs/requirements.md anchors instead. The names are put together
// from parts, so that this file names none of them itself.
var outsideCite = regexp.MustCompile(`\b` + designDoc + `(\.md)?\b|\b` + sourceDocs + `s?[ /]0\d\d\b|` + besideClone + `/` + sourceDocs + `s`)

const (
	designDoc   = "DES" + "IGN" // the design document's name
	sourceDocs  = "se" + "ed"   // the source documents' folder, without its plural s
	besideClone = "sha" + "red" // the folder beside the clone
)

// TestCitesOnlyItsOwnDocuments: no source file or page cites a document
// outside the repository; a reader of the clone can follow every cite.
func TestCitesOnlyItsOwnDocuments(t *testing.T) {
	walkFiles(t, func(path string) error {
		switch filepath.Ext(path) {
		case ".go", ".rego", ".md", ".yaml", ".sql":
		default:
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, l := range strings.Split(string(b), "\n") {
			if outsideCite.MatchString(l) && !strings.Contains(l, "outsideCite") {
				rel, _ := filepath.Rel(root, path)
				t.Errorf("%s:%d cites a document outside the repository (%s); cite a docs/requirements.md anchor or a docs/ page", rel, i+1, outsideCite.FindString(l))
			}
		}
		return nil
	})
}

var (
	headingLine = regexp.MustCompile(`^#{1,6} +(.+?) *#*$`)
	htmlAnchor  = regexp.MustCompile(`<a (?:id|name)="([^"]+)"`)
	fence       = regexp.MustCompile("^ {0,3}(```|~~~)")
	inlineLink  = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
)

// slug is GitHub's anchor for a heading: lower case, punctuation other
// than hyphens and underscores dropped, spaces turned into hyphens.
func slug(heading string) string {
	heading = inlineLink.ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_':
			b.WriteRune(r)
		case unicode.IsLetter(r), unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// line is one line of a Markdown page; fenced says it is inside a fenced
// code block (a fence line itself counts as fenced, with no text).
type line struct {
	text   string
	fenced bool
}

// lines splits a Markdown page into its lines, marking those of fenced
// code blocks.
func lines(text string) []line {
	var out []line
	inFence := false
	for _, l := range strings.Split(text, "\n") {
		if fence.MatchString(l) {
			inFence = !inFence
			out = append(out, line{fenced: true})
			continue
		}
		out = append(out, line{text: l, fenced: inFence})
	}
	return out
}

// pageAnchors returns the anchors of a Markdown page: its headings'
// slugs (numbered -1, -2, ... when repeated, as GitHub does) and its
// explicit <a id> / <a name> anchors, code blocks left out.
func pageAnchors(text string) map[string]bool {
	anchors := map[string]bool{}
	for _, l := range lines(text) {
		line := l.text
		if l.fenced {
			continue
		}
		for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
			anchors[m[1]] = true
		}
		if m := headingLine.FindStringSubmatch(line); m != nil {
			s := slug(m[1])
			a := s
			for n := 1; anchors[a]; n++ {
				a = s + "-" + strconv.Itoa(n)
			}
			anchors[a] = true
		}
	}
	return anchors
}

var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// proseOf returns text with fenced code blocks and code spans blanked, so
// that links are looked for in prose only.
func proseOf(text string) string {
	var b strings.Builder
	for _, l := range lines(text) {
		if !l.fenced {
			b.WriteString(codeSpan.ReplaceAllString(l.text, "``"))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// TestLinksResolve: every relative link of README.md and docs/*.md names
// a file or folder that exists, and every #anchor one of its anchors.
func TestLinksResolve(t *testing.T) {
	for _, page := range docPages(t) {
		for _, m := range mdLink.FindAllStringSubmatch(proseOf(read(t, page)), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			path := page
			if file != "" {
				path = filepath.ToSlash(filepath.Join(filepath.Dir(page), file))
				if _, err := os.Stat(filepath.Join(root, path)); err != nil {
					t.Errorf("%s links to %s, which does not exist", page, target)
					continue
				}
			}
			if anchor == "" || !strings.HasSuffix(path, ".md") {
				continue
			}
			if !pageAnchors(read(t, path))[anchor] {
				t.Errorf("%s links to %s, but %s has no anchor #%s", page, target, path, anchor)
			}
		}
	}
}

var (
	makeCmd    = regexp.MustCompile(`(?:^|[\s(` + "`" + `;&|])make ((?:[A-Z_]+=\S+ +)*)([a-z][a-z0-9-]*)`)
	mcpgateCmd = regexp.MustCompile(`(?:^|[\s(` + "`" + `/;&|$])mcpgate ([a-z][a-z-]*)(?: ([a-z][a-z-]*))?`)
	makeTarget = regexp.MustCompile(`(?m)^([a-z][a-z0-9-]*):`)
	cobraUse   = regexp.MustCompile(`Use: +"([a-z][a-z-]*)([^"]*)"`)
	opaSubName = regexp.MustCompile(`\{"([a-z]+)", "`)
)

// codeOf returns the code of a Markdown page: its fenced blocks and code
// spans, where commands are written.
func codeOf(text string) []string {
	var code []string
	for _, l := range lines(text) {
		if l.fenced {
			code = append(code, l.text)
			continue
		}
		for _, m := range codeSpan.FindAllStringSubmatch(l.text, -1) {
			code = append(code, m[1])
		}
	}
	return code
}

// cliCommands returns the names of mcpgate's commands, read from the
// cobra definitions in cmd/mcpgate (the command tree is package main's,
// so it cannot be imported): every command's name, and for each the
// subcommands it groups. groups holds the commands declared without
// arguments, whose next word names a subcommand.
func cliCommands(t *testing.T) (names, groups map[string]bool) {
	t.Helper()
	names, groups = map[string]bool{}, map[string]bool{}
	files, err := filepath.Glob(filepath.Join(root, "cmd", "mcpgate", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range cobraUse.FindAllStringSubmatch(string(b), -1) {
			names[m[1]] = true
			if m[2] == "" {
				groups[m[1]] = true
			}
		}
		for _, m := range opaSubName.FindAllStringSubmatch(string(b), -1) {
			names[m[1]] = true
		}
	}
	names["help"] = true // cobra's own
	delete(groups, "mcpgate")
	if !names["serve"] || !names["policy"] {
		t.Fatalf("found no serve or policy command in cmd/mcpgate: %v", names)
	}
	return names, groups
}

// TestCommandsExist: every `make <target>` README.md and docs/ name is a
// Makefile target, and every `mcpgate <command> [<subcommand>]` a command
// of the CLI.
func TestCommandsExist(t *testing.T) {
	targets := map[string]bool{}
	for _, m := range makeTarget.FindAllStringSubmatch(read(t, "Makefile"), -1) {
		targets[m[1]] = true
	}
	names, groups := cliCommands(t)
	for _, page := range docPages(t) {
		for _, code := range codeOf(read(t, page)) {
			for _, m := range makeCmd.FindAllStringSubmatch(code, -1) {
				if !targets[m[2]] {
					t.Errorf("%s names `make %s`, which is not a Makefile target", page, m[2])
				}
			}
			for _, m := range mcpgateCmd.FindAllStringSubmatch(code, -1) {
				if !names[m[1]] {
					t.Errorf("%s names `mcpgate %s`, which is not a command", page, m[1])
					continue
				}
				if m[2] != "" && groups[m[1]] && !names[m[2]] {
					t.Errorf("%s names `mcpgate %s %s`, which is not a command", page, m[1], m[2])
				}
			}
		}
	}
}

// TestSlug pins the slugs the link check relies on.
func TestSlug(t *testing.T) {
	for in, want := range map[string]string{
		"The request path":                   "the-request-path",
		"cc_server surface":                  "cc_server-surface",
		"`script.run` carve-out":             "scriptrun-carve-out",
		"External coordinators (`/api/mcp`)": "external-coordinators-apimcp",
		"Tasks, tokens and clients":          "tasks-tokens-and-clients",
	} {
		if got := slug(in); got != want {
			t.Errorf("slug(%q) = %q, want %q", in, got, want)
		}
	}
}
