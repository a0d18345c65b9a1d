// Package policy checks Ringjob's Terraform (infra/terraform) against the
// rules a deployment must keep, by parsing every .tf file with hcl/v2; no
// provider and no AWS account are needed.
//
// The rules (Rule* constants) are checked statically and conservatively: a
// value is judged by every literal it may take (literals in the expression,
// the defaults of the variables it reads, what module calls pass for them,
// the locals it reads, the for_each it iterates), so a rule cannot be
// bypassed by moving a literal into a variable or a local.
package policy

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// Rule names a policy rule.
type Rule string

// The rules.
const (
	// RuleVariables: every variable has a type and a description; every
	// output has a description.
	RuleVariables Rule = "variables-typed-and-described"
	// RuleEncryption: databases are encrypted at rest with a KMS key.
	RuleEncryption Rule = "database-encrypted"
	// RuleDeletionProtection: databases are protected from deletion by
	// default.
	RuleDeletionProtection Rule = "deletion-protection-default"
	// RuleOpenIngress: no ingress from 0.0.0.0/0 or ::/0 except to the load
	// balancer's security group on ports 443 and 80.
	RuleOpenIngress Rule = "no-open-ingress"
	// RuleIAMWildcard: no "*" in IAM actions or resources. The two
	// exceptions IAM itself forces: ecr:GetAuthorizationToken alone on "*"
	// (it has no resource-level permissions), and the log streams of one
	// log group (LOG_GROUP_ARN:log-stream:*), whose names AWS chooses.
	// Policies are written with aws_iam_policy_document (so they can be
	// checked) and AWS-managed policies are not attached (they are broad).
	RuleIAMWildcard Rule = "iam-no-wildcards"
	// RuleTaskRole: the scheduler's task role may only invoke and describe
	// Lambda functions.
	RuleTaskRole Rule = "task-role-lambda-only"
	// RuleSecrets: secrets come from Secrets Manager only: no secret-like
	// names or passwords in plain container environment, task secrets
	// reference Secrets Manager, no SSM parameters, no literal database
	// passwords.
	RuleSecrets Rule = "secrets-from-secrets-manager"
	// RuleExampleWiring: the example root module calls every module.
	RuleExampleWiring Rule = "example-wires-every-module"
)

// Violation is one broken rule at one place.
type Violation struct {
	Rule    Rule
	Pos     string // file:line
	Message string
}

func (v Violation) String() string { return fmt.Sprintf("%s: [%s] %s", v.Pos, v.Rule, v.Message) }

// ModulesDir and ExampleDir are where Check looks under its root.
const (
	ModulesDir = "modules"
	ExampleDir = "example"
)

// Check parses every .tf file under root (a tree with modules/NAME and
// example/) and returns the violations, sorted by position. An error means
// the tree could not be read or parsed.
func Check(root string) ([]Violation, error) {
	t, err := load(root)
	if err != nil {
		return nil, err
	}
	c := &checker{tree: t}
	for _, m := range t.mods {
		c.variables(m)
		c.databases(m)
		c.ingress(m)
		c.iam(m)
		c.secrets(m)
	}
	c.wiring(root)
	sort.Slice(c.out, func(i, j int) bool { return c.out[i].Pos < c.out[j].Pos })
	return c.out, nil
}

// module is one directory of .tf files.
type module struct {
	dir    string
	blocks []*hclsyntax.Block
}

type tree struct {
	mods  []*module
	byDir map[string]*module
}

func load(root string) (*tree, error) {
	t := &tree{byDir: map[string]*module{}}
	p := hclparse()
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".terraform" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".tf") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, diags := p(src, path)
		if diags.HasErrors() {
			return fmt.Errorf("parse %s: %s", path, diags.Error())
		}
		dir := filepath.Dir(path)
		m := t.byDir[dir]
		if m == nil {
			m = &module{dir: dir}
			t.byDir[dir] = m
			t.mods = append(t.mods, m)
		}
		m.blocks = append(m.blocks, f.Body.(*hclsyntax.Body).Blocks...)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read terraform under %s: %w", root, err)
	}
	if len(t.mods) == 0 {
		return nil, fmt.Errorf("no .tf files under %s", root)
	}
	return t, nil
}

func hclparse() func([]byte, string) (*hcl.File, hcl.Diagnostics) {
	return func(src []byte, name string) (*hcl.File, hcl.Diagnostics) {
		return hclsyntax.ParseConfig(src, name, hcl.InitialPos)
	}
}

type checker struct {
	tree *tree
	out  []Violation
}

func (c *checker) report(r Rule, rng hcl.Range, format string, args ...any) {
	c.out = append(c.out, Violation{Rule: r, Pos: fmt.Sprintf("%s:%d", rng.Filename, rng.Start.Line), Message: fmt.Sprintf(format, args...)})
}

// --- blocks and values --------------------------------------------------

func (m *module) find(typ string, labels ...string) []*hclsyntax.Block {
	var out []*hclsyntax.Block
	for _, b := range m.blocks {
		if b.Type != typ || len(b.Labels) < len(labels) {
			continue
		}
		ok := true
		for i, l := range labels {
			if b.Labels[i] != l {
				ok = false
			}
		}
		if ok {
			out = append(out, b)
		}
	}
	return out
}

func (m *module) local(name string) hclsyntax.Expression {
	for _, b := range m.find("locals") {
		if a, ok := b.Body.Attributes[name]; ok {
			return a.Expr
		}
	}
	return nil
}

// scope is where an expression is evaluated: its module and, for each.*,
// the block whose for_each it iterates.
type scope struct {
	mod   *module
	block *hclsyntax.Block
}

// strings returns every string an expression may take: its literals, and
// those of whatever it reads, followed to their sources. Templates are also
// rendered whole, with "X" for each interpolation.
func (c *checker) strings(s scope, e hclsyntax.Expression) []string {
	seen := map[hclsyntax.Expression]bool{}
	var out []string
	var walk func(s scope, e hclsyntax.Expression)
	walk = func(s scope, e hclsyntax.Expression) {
		if e == nil || seen[e] {
			return
		}
		seen[e] = true
		hclsyntax.VisitAll(e, func(n hclsyntax.Node) hcl.Diagnostics {
			switch n := n.(type) {
			case *hclsyntax.LiteralValueExpr:
				if n.Val.Type() == cty.String && n.Val.IsKnown() && !n.Val.IsNull() {
					out = append(out, n.Val.AsString())
				}
			case *hclsyntax.TemplateExpr:
				if !n.IsStringLiteral() { // a plain string is visited as its literal
					out = append(out, render(n))
				}
			case *hclsyntax.ScopeTraversalExpr:
				for _, src := range c.sources(s, n.Traversal) {
					walk(src.scope, src.expr)
				}
			}
			return nil
		})
	}
	walk(s, e)
	return out
}

type source struct {
	scope scope
	expr  hclsyntax.Expression
}

// sources finds the expressions a reference reads: a variable's default and
// what callers pass for it, a local's value, the for_each of each.*.
func (c *checker) sources(s scope, tr hcl.Traversal) []source {
	root := tr.RootName()
	attr := ""
	if len(tr) > 1 {
		if a, ok := tr[1].(hcl.TraverseAttr); ok {
			attr = a.Name
		}
	}
	var out []source
	switch root {
	case "var":
		for _, v := range s.mod.find("variable", attr) {
			if d, ok := v.Body.Attributes["default"]; ok {
				out = append(out, source{scope{mod: s.mod}, narrow(d.Expr, tr[2:])})
			}
		}
		for _, caller := range c.callers(s.mod) {
			if a, ok := caller.block.Body.Attributes[attr]; ok {
				out = append(out, source{scope{mod: caller.mod}, narrow(a.Expr, tr[2:])})
			}
		}
	case "local":
		if e := s.mod.local(attr); e != nil {
			out = append(out, source{scope{mod: s.mod}, e})
		}
	case "each":
		if s.block != nil {
			if a, ok := s.block.Body.Attributes["for_each"]; ok {
				out = append(out, source{scope{mod: s.mod}, a.Expr})
			}
		}
	}
	return out
}

// narrow follows attribute steps (var.database.username) into an object
// constructor, so only the named item is judged.
func narrow(e hclsyntax.Expression, steps hcl.Traversal) hclsyntax.Expression {
	for _, step := range steps {
		a, ok := step.(hcl.TraverseAttr)
		obj, isObj := e.(*hclsyntax.ObjectConsExpr)
		if !ok || !isObj {
			return e
		}
		found := false
		for _, item := range obj.Items {
			if hcl.ExprAsKeyword(item.KeyExpr) == a.Name {
				e, found = item.ValueExpr, true
				break
			}
		}
		if !found {
			return e
		}
	}
	return e
}

type call struct {
	mod   *module
	block *hclsyntax.Block
}

// callers are the module blocks whose source is m's directory.
func (c *checker) callers(m *module) []call {
	var out []call
	for _, caller := range c.tree.mods {
		for _, b := range caller.find("module") {
			src, ok := literal(b.Body.Attributes["source"])
			if ok && filepath.Clean(filepath.Join(caller.dir, src)) == filepath.Clean(m.dir) {
				out = append(out, call{caller, b})
			}
		}
	}
	return out
}

func render(t *hclsyntax.TemplateExpr) string {
	var b strings.Builder
	for _, p := range t.Parts {
		if l, ok := p.(*hclsyntax.LiteralValueExpr); ok && l.Val.Type() == cty.String {
			b.WriteString(l.Val.AsString())
		} else {
			b.WriteString("X")
		}
	}
	return b.String()
}

// literal returns an attribute's value when it is a constant string.
func literal(a *hclsyntax.Attribute) (string, bool) {
	if a == nil {
		return "", false
	}
	v, diags := a.Expr.Value(nil)
	if diags.HasErrors() || v.Type() != cty.String || v.IsNull() {
		return "", false
	}
	return v.AsString(), true
}

// constant evaluates an expression without context (literals only).
func constant(e hclsyntax.Expression) (cty.Value, bool) {
	v, diags := e.Value(nil)
	if diags.HasErrors() || !v.IsWhollyKnown() {
		return cty.NilVal, false
	}
	return v, true
}

// references reports whether e reads any traversal whose text starts with
// one of the prefixes (e.g. "aws_security_group.alb").
func references(e hclsyntax.Expression, prefixes ...string) bool {
	for _, tr := range e.Variables() {
		name := traversalName(tr)
		for _, p := range prefixes {
			if name == p || strings.HasPrefix(name, p+".") || strings.HasPrefix(name, p+"[") {
				return true
			}
		}
	}
	return false
}

// onlyReferences: e reads one of names and nothing else.
func onlyReferences(e hclsyntax.Expression, names ...string) bool {
	vars := e.Variables()
	if len(vars) == 0 {
		return false
	}
	for _, tr := range vars {
		if !slices.Contains(names, traversalName(tr)) {
			return false
		}
	}
	return true
}

func traversalName(tr hcl.Traversal) string {
	var b strings.Builder
	b.WriteString(tr.RootName())
	for _, step := range tr[1:] {
		switch s := step.(type) {
		case hcl.TraverseAttr:
			b.WriteString("." + s.Name)
		case hcl.TraverseIndex:
			b.WriteString("[]")
		}
	}
	return b.String()
}

// --- rules --------------------------------------------------------------

func (c *checker) variables(m *module) {
	for _, v := range m.find("variable") {
		if _, ok := v.Body.Attributes["type"]; !ok {
			c.report(RuleVariables, v.DefRange(), "variable %q has no type", v.Labels[0])
		}
		if d, ok := literal(v.Body.Attributes["description"]); !ok || strings.TrimSpace(d) == "" {
			c.report(RuleVariables, v.DefRange(), "variable %q has no description", v.Labels[0])
		}
	}
	for _, o := range m.find("output") {
		if d, ok := literal(o.Body.Attributes["description"]); !ok || strings.TrimSpace(d) == "" {
			c.report(RuleVariables, o.DefRange(), "output %q has no description", o.Labels[0])
		}
	}
}

var databaseTypes = []string{"aws_rds_cluster", "aws_db_instance"}

func (c *checker) databases(m *module) {
	for _, typ := range databaseTypes {
		for _, b := range m.find("resource", typ) {
			name := typ + "." + b.Labels[1]
			if !c.isTrue(scope{m, b}, b.Body.Attributes["storage_encrypted"]) {
				c.report(RuleEncryption, b.DefRange(), "%s: storage_encrypted must be true", name)
			}
			if _, ok := b.Body.Attributes["kms_key_id"]; !ok {
				c.report(RuleEncryption, b.DefRange(), "%s: kms_key_id must name a KMS key", name)
			}
			if !c.isTrue(scope{m, b}, b.Body.Attributes["deletion_protection"]) {
				c.report(RuleDeletionProtection, b.DefRange(), "%s: deletion_protection must be true or a variable that defaults to true", name)
			}
			if a, ok := b.Body.Attributes["master_password"]; ok {
				c.report(RuleSecrets, a.SrcRange, "%s: master_password in configuration; use manage_master_user_password (Secrets Manager)", name)
			}
			if !c.isTrue(scope{m, b}, b.Body.Attributes["manage_master_user_password"]) {
				c.report(RuleSecrets, b.DefRange(), "%s: manage_master_user_password must be true (password kept by Secrets Manager)", name)
			}
		}
	}
}

// isTrue: the attribute is literally true, or reads only variables whose
// default is true (what callers pass is their choice).
func (c *checker) isTrue(s scope, a *hclsyntax.Attribute) bool {
	if a == nil {
		return false
	}
	if v, ok := constant(a.Expr); ok {
		return v.Type() == cty.Bool && v.True()
	}
	tr, ok := a.Expr.(*hclsyntax.ScopeTraversalExpr)
	if !ok || tr.Traversal.RootName() != "var" || len(tr.Traversal) != 2 {
		return false
	}
	name := tr.Traversal[1].(hcl.TraverseAttr).Name
	for _, v := range s.mod.find("variable", name) {
		if d, ok := v.Body.Attributes["default"]; ok {
			val, ok := constant(d.Expr)
			return ok && val.Type() == cty.Bool && val.True()
		}
	}
	return false
}

var openCIDRs = []string{"0.0.0.0/0", "::/0"}

func isOpen(ss []string) bool {
	for _, s := range ss {
		for _, o := range openCIDRs {
			if strings.Contains(s, o) {
				return true
			}
		}
	}
	return false
}

// albGroups are the security groups (as "aws_security_group.NAME") that a
// load balancer of the module uses.
func albGroups(m *module) []string {
	var out []string
	for _, lb := range m.find("resource", "aws_lb") {
		if a, ok := lb.Body.Attributes["security_groups"]; ok {
			for _, tr := range a.Expr.Variables() {
				if tr.RootName() == "aws_security_group" && len(tr) > 1 {
					out = append(out, "aws_security_group."+tr[1].(hcl.TraverseAttr).Name)
				}
			}
		}
	}
	return out
}

func (c *checker) ingress(m *module) {
	albs := albGroups(m)
	webPorts := func(b *hclsyntax.Body) bool {
		from, fok := b.Attributes["from_port"]
		to, tok := b.Attributes["to_port"]
		if !fok || !tok {
			return false
		}
		fv, ok1 := constant(from.Expr)
		tv, ok2 := constant(to.Expr)
		if !ok1 || !ok2 || fv.Type() != cty.Number || !fv.RawEquals(tv) {
			return false
		}
		return fv.RawEquals(cty.NumberIntVal(443)) || fv.RawEquals(cty.NumberIntVal(80))
	}
	cidrs := func(s scope, b *hclsyntax.Body, names ...string) []string {
		var out []string
		for _, n := range names {
			if a, ok := b.Attributes[n]; ok {
				out = append(out, c.strings(s, a.Expr)...)
			}
		}
		return out
	}
	check := func(b *hclsyntax.Block, body *hclsyntax.Body, group hclsyntax.Expression, what string) {
		s := scope{m, b}
		if !isOpen(cidrs(s, body, "cidr_ipv4", "cidr_ipv6", "cidr_blocks", "ipv6_cidr_blocks")) {
			return
		}
		if group != nil && references(group, albs...) && webPorts(body) {
			return
		}
		c.report(RuleOpenIngress, body.SrcRange, "%s: ingress from anywhere is allowed only to the load balancer on 443 or 80", what)
	}
	for _, b := range m.find("resource", "aws_vpc_security_group_ingress_rule") {
		var g hclsyntax.Expression
		if a, ok := b.Body.Attributes["security_group_id"]; ok {
			g = a.Expr
		}
		check(b, b.Body, g, "aws_vpc_security_group_ingress_rule."+b.Labels[1])
	}
	for _, b := range m.find("resource", "aws_security_group_rule") {
		if t, _ := literal(b.Body.Attributes["type"]); t != "ingress" {
			continue
		}
		var g hclsyntax.Expression
		if a, ok := b.Body.Attributes["security_group_id"]; ok {
			g = a.Expr
		}
		check(b, b.Body, g, "aws_security_group_rule."+b.Labels[1])
	}
	for _, b := range m.find("resource", "aws_security_group") {
		self := &hclsyntax.ScopeTraversalExpr{Traversal: hcl.Traversal{hcl.TraverseRoot{Name: "aws_security_group"}, hcl.TraverseAttr{Name: b.Labels[1]}}}
		for _, in := range b.Body.Blocks {
			if in.Type == "ingress" {
				check(b, in.Body, self, "aws_security_group."+b.Labels[1]+" ingress")
			}
		}
	}
}

// statements returns the statement bodies of a policy document, including
// the content of dynamic "statement" blocks.
func statements(doc *hclsyntax.Block) []*hclsyntax.Body {
	var out []*hclsyntax.Body
	for _, b := range doc.Body.Blocks {
		switch {
		case b.Type == "statement":
			out = append(out, b.Body)
		case b.Type == "dynamic" && len(b.Labels) == 1 && b.Labels[0] == "statement":
			for _, cb := range b.Body.Blocks {
				if cb.Type == "content" {
					out = append(out, cb.Body)
				}
			}
		}
	}
	return out
}

// logStreamsOf reports whether e is "${aws_cloudwatch_log_group.X.arn}:log-stream:*"
// (X possibly indexed).
func logStreamsOf(e hclsyntax.Expression) bool {
	t, ok := e.(*hclsyntax.TemplateExpr)
	if !ok || len(t.Parts) != 2 {
		return false
	}
	var tr hcl.Traversal
	switch ref := t.Parts[0].(type) {
	case *hclsyntax.ScopeTraversalExpr:
		tr = ref.Traversal
	case *hclsyntax.RelativeTraversalExpr:
		src, ok := ref.Source.(*hclsyntax.IndexExpr)
		if !ok {
			return false
		}
		coll, ok := src.Collection.(*hclsyntax.ScopeTraversalExpr)
		if !ok {
			return false
		}
		tr = append(append(hcl.Traversal{}, coll.Traversal...), ref.Traversal...)
	default:
		return false
	}
	last, ok := tr[len(tr)-1].(hcl.TraverseAttr)
	if tr.RootName() != "aws_cloudwatch_log_group" || !ok || last.Name != "arn" {
		return false
	}
	lit, ok := t.Parts[1].(*hclsyntax.LiteralValueExpr)
	return ok && lit.Val.Type() == cty.String && lit.Val.AsString() == ":log-stream:*"
}

// lambdaVPCActions are what Lambda needs to place a function in a VPC (the
// AWS-managed AWSLambdaVPCAccessExecutionRole, written out); EC2 takes only
// "*" as their resource.
var lambdaVPCActions = map[string]bool{"ec2:CreateNetworkInterface": true, "ec2:DescribeNetworkInterfaces": true,
	"ec2:DescribeSubnets": true, "ec2:DeleteNetworkInterface": true, "ec2:AssignPrivateIpAddresses": true,
	"ec2:UnassignPrivateIpAddresses": true}

// onlyNetworkInterfaces: a statement of nothing but those actions.
func onlyNetworkInterfaces(actions []string) bool {
	if len(actions) == 0 {
		return false
	}
	for _, a := range actions {
		if !lambdaVPCActions[a] {
			return false
		}
	}
	return true
}

func (c *checker) iam(m *module) {
	// Documents that are KMS key policies: there the resource "*" means the
	// key the policy is attached to, and is the only form KMS accepts.
	keyPolicy := map[string]bool{}
	for _, k := range m.find("resource", "aws_kms_key") {
		if a, ok := k.Body.Attributes["policy"]; ok {
			for _, doc := range m.find("data", "aws_iam_policy_document") {
				if references(a.Expr, "data.aws_iam_policy_document."+doc.Labels[1]) {
					keyPolicy[doc.Labels[1]] = true
				}
			}
		}
	}
	for _, doc := range m.find("data", "aws_iam_policy_document") {
		s := scope{m, doc}
		for _, st := range statements(doc) {
			var actions []string
			for _, n := range []string{"actions", "not_actions"} {
				if a, ok := st.Attributes[n]; ok {
					for _, v := range c.strings(s, a.Expr) {
						actions = append(actions, v)
						if strings.Contains(v, "*") {
							c.report(RuleIAMWildcard, a.SrcRange, "policy %s: wildcard action %q", doc.Labels[1], v)
						}
					}
				}
			}
			onlyRegistryLogin := len(actions) == 1 && actions[0] == "ecr:GetAuthorizationToken"
			if onlyNetworkInterfaces(actions) {
				onlyRegistryLogin = true // EC2 accepts only "*" for these, like the registry login
			}
			for _, n := range []string{"resources", "not_resources"} {
				a, ok := st.Attributes[n]
				if !ok {
					continue
				}
				var elems []hclsyntax.Expression
				if tup, ok := a.Expr.(*hclsyntax.TupleConsExpr); ok {
					elems = tup.Exprs
				} else {
					elems = []hclsyntax.Expression{a.Expr}
				}
				for _, el := range elems {
					if logStreamsOf(el) {
						continue
					}
					for _, v := range c.strings(s, el) {
						if v == "*" && (onlyRegistryLogin || keyPolicy[doc.Labels[1]]) && n == "resources" {
							continue
						}
						if strings.Contains(v, "*") {
							c.report(RuleIAMWildcard, el.Range(), "policy %s: wildcard resource %q", doc.Labels[1], v)
						}
					}
				}
			}
		}
	}
	// Policies must come from policy documents (checked above), and no
	// AWS-managed policy is attached.
	for _, b := range m.blocks {
		if b.Type != "resource" {
			continue
		}
		for _, n := range []string{"policy", "assume_role_policy", "inline_policy"} {
			a, ok := b.Body.Attributes[n]
			if !ok || !strings.HasPrefix(b.Labels[0], "aws_iam") {
				continue
			}
			if !references(a.Expr, "data.aws_iam_policy_document") {
				c.report(RuleIAMWildcard, a.SrcRange, "%s.%s: write %s with an aws_iam_policy_document data source", b.Labels[0], b.Labels[1], n)
			}
		}
		for _, n := range []string{"policy_arn", "managed_policy_arns"} {
			if a, ok := b.Body.Attributes[n]; ok {
				for _, v := range c.strings(scope{m, b}, a.Expr) {
					if strings.Contains(v, ":iam::aws:policy/") {
						c.report(RuleIAMWildcard, a.SrcRange, "%s.%s: AWS-managed policy %s is broader than needed; write a policy document", b.Labels[0], b.Labels[1], v)
					}
				}
			}
		}
	}
	c.taskRole(m)
}

var taskRoleActions = map[string]bool{"lambda:InvokeFunction": true, "lambda:GetFunction": true}

// taskRoleScopedActions: the task may also read the database password
// secret (to pick up a rotated password) and decrypt with its key, and
// deliver failure records to the failure destinations it is given (each
// kind its one action), on those resources only.
var taskRoleScopedActions = map[string][]string{
	// local.replica_password_secret_arn is the master's secret or the
	// application user's (var.database_app_user).
	"secretsmanager:GetSecretValue": {"var.database.password_secret_arn", "local.replica_password_secret_arn"},
	"kms:Decrypt":                   {"var.database.kms_key_arn"},
	"sqs:SendMessage":               {"local.failure_sqs"},
	"sqs:GetQueueUrl":               {"local.failure_sqs"},
	"sns:Publish":                   {"local.failure_sns"},
	"events:PutEvents":              {"local.failure_events"},
}

// taskRole: whatever is attached to aws_iam_role.task allows only
// lambda:InvokeFunction and lambda:GetFunction, reading the database
// password secret, and delivering to the failure destinations.
func (c *checker) taskRole(m *module) {
	if len(m.find("resource", "aws_iam_role", "task")) == 0 {
		return
	}
	for _, b := range m.find("resource") {
		role, ok := b.Body.Attributes["role"]
		if !ok || !references(role.Expr, "aws_iam_role.task") {
			continue
		}
		if b.Labels[0] != "aws_iam_role_policy" {
			c.report(RuleTaskRole, b.DefRange(), "%s.%s: the task role gets only an inline policy that invokes functions", b.Labels[0], b.Labels[1])
			continue
		}
		pol := b.Body.Attributes["policy"]
		if pol == nil {
			continue
		}
		for _, tr := range pol.Expr.Variables() {
			if tr.RootName() != "data" || len(tr) < 3 {
				continue
			}
			for _, doc := range m.find("data", "aws_iam_policy_document", tr[2].(hcl.TraverseAttr).Name) {
				for _, st := range statements(doc) {
					if _, ok := st.Attributes["not_actions"]; ok {
						c.report(RuleTaskRole, st.SrcRange, "task role: not_actions is not allowed")
					}
					if a, ok := st.Attributes["actions"]; ok {
						for _, v := range c.strings(scope{m, doc}, a.Expr) {
							if taskRoleActions[v] {
								continue
							}
							if only, ok := taskRoleScopedActions[v]; ok {
								if res, ok := st.Attributes["resources"]; ok && onlyReferences(res.Expr, only...) {
									continue
								}
								c.report(RuleTaskRole, a.SrcRange, "task role: action %q is allowed on %s only", v, strings.Join(only, " or "))
								continue
							}
							c.report(RuleTaskRole, a.SrcRange, "task role: action %q; only lambda:InvokeFunction and lambda:GetFunction (and reading the database password secret) are allowed", v)
						}
					}
				}
			}
		}
	}
}

var (
	secretName   = regexp.MustCompile(`(?i)TOKEN|PASSWORD|PASSWD|SECRET|CREDENTIAL|PRIVATE_KEY|ACCESS_KEY`)
	urlWithPass  = regexp.MustCompile(`://[^/@\s:]*:[^/@\s]+@`)
	secretSource = regexp.MustCompile(`(?i)secret`)
)

func (c *checker) secrets(m *module) {
	for _, b := range m.find("resource", "aws_ssm_parameter") {
		c.report(RuleSecrets, b.DefRange(), "aws_ssm_parameter.%s: keep configuration secrets in Secrets Manager", b.Labels[1])
	}
	for _, b := range m.find("resource", "aws_ecs_task_definition") {
		a, ok := b.Body.Attributes["container_definitions"]
		if !ok {
			continue
		}
		s := scope{m, b}
		hclsyntax.VisitAll(a.Expr, func(n hclsyntax.Node) hcl.Diagnostics {
			obj, ok := n.(*hclsyntax.ObjectConsExpr)
			if !ok {
				return nil
			}
			for _, item := range obj.Items {
				switch hcl.ExprAsKeyword(item.KeyExpr) {
				case "environment":
					c.plainEnvironment(s, item.ValueExpr)
				case "secrets":
					c.secretRefs(item.ValueExpr)
				}
			}
			return nil
		})
	}
}

// plainEnvironment: no name that looks like a secret, no URL with a
// password, among everything the environment list may hold.
func (c *checker) plainEnvironment(s scope, e hclsyntax.Expression) {
	for _, v := range c.strings(s, e) {
		if secretName.MatchString(v) && !strings.HasSuffix(strings.ToUpper(v), "_ARN") { // an ARN names a secret, it is not one
			c.report(RuleSecrets, e.Range(), "container environment holds %q: secrets go in \"secrets\" from Secrets Manager", v)
		}
		if urlWithPass.MatchString(v) {
			c.report(RuleSecrets, e.Range(), "container environment holds a URL with a password (%s): pass the password from Secrets Manager", redact(v))
		}
	}
	// Object keys of maps merged into the environment (name = value maps).
	seen := map[hclsyntax.Expression]bool{}
	var keys func(s scope, e hclsyntax.Expression)
	keys = func(s scope, e hclsyntax.Expression) {
		if seen[e] {
			return
		}
		seen[e] = true
		hclsyntax.VisitAll(e, func(n hclsyntax.Node) hcl.Diagnostics {
			switch n := n.(type) {
			case *hclsyntax.ObjectConsExpr:
				for _, item := range n.Items {
					if k := hcl.ExprAsKeyword(item.KeyExpr); secretName.MatchString(k) && !strings.HasSuffix(strings.ToUpper(k), "_ARN") {
						c.report(RuleSecrets, item.KeyExpr.Range(), "container environment sets %s: secrets go in \"secrets\" from Secrets Manager", k)
					}
				}
			case *hclsyntax.ScopeTraversalExpr:
				for _, src := range c.sources(s, n.Traversal) {
					keys(src.scope, src.expr)
				}
			}
			return nil
		})
	}
	keys(s, e)
}

func redact(v string) string { return urlWithPass.ReplaceAllString(v, "://***@") }

// secretRefs: every valueFrom reads a Secrets Manager secret, not an SSM
// parameter.
func (c *checker) secretRefs(e hclsyntax.Expression) {
	hclsyntax.VisitAll(e, func(n hclsyntax.Node) hcl.Diagnostics {
		obj, ok := n.(*hclsyntax.ObjectConsExpr)
		if !ok {
			return nil
		}
		for _, item := range obj.Items {
			if hcl.ExprAsKeyword(item.KeyExpr) != "valueFrom" {
				continue
			}
			v := item.ValueExpr
			fromSecret := false
			for _, tr := range v.Variables() {
				name := traversalName(tr)
				if strings.Contains(name, "ssm") {
					fromSecret = false
					break
				}
				if secretSource.MatchString(name) {
					fromSecret = true
				}
			}
			if !fromSecret {
				c.report(RuleSecrets, v.Range(), "valueFrom must read a Secrets Manager secret (an aws_secretsmanager_secret or a *secret_arn variable)")
			}
		}
		return nil
	})
}

func (c *checker) wiring(root string) {
	example := c.tree.byDir[filepath.Join(root, ExampleDir)]
	entries, err := os.ReadDir(filepath.Join(root, ModulesDir))
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		m := c.tree.byDir[filepath.Join(root, ModulesDir, e.Name())]
		if m == nil {
			continue
		}
		wired := false
		for _, call := range c.callers(m) {
			if example != nil && call.mod == example {
				wired = true
			}
		}
		if !wired {
			rng := hcl.Range{Filename: filepath.Join(root, ExampleDir), Start: hcl.Pos{Line: 0}}
			c.report(RuleExampleWiring, rng, "the example does not call module %s", e.Name())
		}
	}
}
