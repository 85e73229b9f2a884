package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/tester"
)

// policyCmd runs `mcpgate policy test|eval`: the same OPA the gateway embeds,
// so a security team can check a bundle with the binary it will run under.
func policyCmd(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("policy: want test or eval")
	}
	switch args[0] {
	case "test":
		return policyTest(ctx, args[1:], out)
	case "eval":
		return policyEval(ctx, args[1:], out)
	default:
		return fmt.Errorf("policy: unknown subcommand %q; want test or eval", args[0])
	}
}

func policyTest(ctx context.Context, args []string, out io.Writer) error {
	dir := "policies"
	if len(args) > 0 {
		dir = args[0]
	}
	modules, store, err := tester.LoadWithRegoVersion([]string{dir}, nil, ast.RegoV1)
	if err != nil {
		return fmt.Errorf("policy test: load %s: %w", dir, err)
	}
	ch, err := tester.NewRunner().SetStore(store).SetModules(modules).Run(ctx, modules)
	if err != nil {
		return fmt.Errorf("policy test: %w", err)
	}
	var pass, fail int
	for r := range ch {
		if r.Pass() {
			pass++
			continue
		}
		fail++
		fmt.Fprintf(out, "FAIL %s\n", r.String())
	}
	fmt.Fprintf(out, "PASS: %d/%d\n", pass, pass+fail)
	if fail > 0 || pass == 0 {
		return fmt.Errorf("policy test: %d failed, %d passed", fail, pass)
	}
	return nil
}

func policyEval(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("policy eval", flag.ContinueOnError)
	inputFile := fs.String("input", "", "input document (JSON file), e.g. a tools/call policy input")
	query := fs.String("query", "data.supacloud.decision", "query to evaluate")
	if err := fs.Parse(args); err != nil {
		return err
	}
	dir := "policies"
	if fs.NArg() > 0 {
		dir = fs.Arg(0)
	}
	opts := []func(*rego.Rego){rego.Query(*query), rego.Load([]string{dir}, func(_ string, info os.FileInfo, _ int) bool {
		return !info.IsDir() && len(info.Name()) > 10 && info.Name()[len(info.Name())-10:] == "_test.rego"
	})}
	if *inputFile != "" {
		raw, err := os.ReadFile(*inputFile)
		if err != nil {
			return fmt.Errorf("policy eval: %w", err)
		}
		var input any
		if err := json.Unmarshal(raw, &input); err != nil {
			return fmt.Errorf("policy eval: %s is not JSON: %w", *inputFile, err)
		}
		opts = append(opts, rego.Input(input))
	}
	rs, err := rego.New(opts...).Eval(ctx)
	if err != nil {
		return fmt.Errorf("policy eval: %w", err)
	}
	if len(rs) == 0 {
		return fmt.Errorf("policy eval: %s is undefined for this input", *query)
	}
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(rs[0].Expressions[0].Value)
}
