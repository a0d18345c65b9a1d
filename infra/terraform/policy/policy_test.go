package policy_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ringjob/ringjob/infra/terraform/policy"
)

// root is the Terraform tree the tests check (this package lives inside it).
const root = ".."

func TestTreeKeepsEveryRule(t *testing.T) {
	vs, err := policy.Check(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		t.Error(v)
	}
}

// Each bad fixture is the real tree with one change that breaks one rule;
// the check must name that rule. Building the fixtures from the real files
// keeps them current: when a change stops applying, the test says so.
func TestBadFixturesAreCaught(t *testing.T) {
	cases := []struct {
		name     string
		file     string
		old, new string
		rule     policy.Rule
	}{
		{"storage not encrypted", "modules/database/main.tf",
			"parameter_group_name            = aws_db_parameter_group.this.name\n  storage_encrypted               = true",
			"parameter_group_name            = aws_db_parameter_group.this.name\n  storage_encrypted               = false", policy.RuleEncryption},
		{"no KMS key", "modules/database/main.tf",
			"parameter_group_name            = aws_db_parameter_group.this.name\n  storage_encrypted               = true\n  kms_key_id                      = local.kms_key_arn",
			"parameter_group_name            = aws_db_parameter_group.this.name\n  storage_encrypted               = true", policy.RuleEncryption},
		{"no KMS key on the Aurora cluster", "modules/database/main.tf",
			"storage_encrypted               = true\n  kms_key_id                      = local.kms_key_arn\n  backup_retention_period         = var.backup_retention_days\n  preferred_backup_window",
			"storage_encrypted               = true\n  backup_retention_period         = var.backup_retention_days\n  preferred_backup_window", policy.RuleEncryption},
		{"deletion protection defaults to false", "modules/database/variables.tf",
			"on purpose).\"\n  type        = bool\n  default     = true", "on purpose).\"\n  type        = bool\n  default     = false", policy.RuleDeletionProtection},
		{"deletion protection off", "modules/database/main.tf",
			"  maintenance_window              = var.preferred_maintenance_window\n  copy_tags_to_snapshot           = true\n  deletion_protection             = var.deletion_protection",
			"  maintenance_window              = var.preferred_maintenance_window\n  copy_tags_to_snapshot           = true\n  deletion_protection             = false", policy.RuleDeletionProtection},
		{"deletion protection off on the Aurora cluster", "modules/database/main.tf",
			"preferred_maintenance_window    = var.preferred_maintenance_window\n  copy_tags_to_snapshot           = true\n  deletion_protection             = var.deletion_protection",
			"preferred_maintenance_window    = var.preferred_maintenance_window\n  copy_tags_to_snapshot           = true\n  deletion_protection             = false", policy.RuleDeletionProtection},
		{"literal master password", "modules/database/main.tf",
			"\n  username                        = var.master_username\n  manage_master_user_password     = true",
			"\n  username                        = var.master_username\n  master_password = \"hunter2hunter2\"", policy.RuleSecrets},
		{"literal master password on the Aurora cluster", "modules/database/main.tf",
			"master_username                 = var.master_username\n  manage_master_user_password     = true",
			"master_username                 = var.master_username\n  master_password = \"hunter2hunter2\"", policy.RuleSecrets},
		{"Aurora storage not encrypted", "modules/database/main.tf",
			"db_cluster_parameter_group_name = aws_rds_cluster_parameter_group.this[0].name\n  storage_encrypted               = true",
			"db_cluster_parameter_group_name = aws_rds_cluster_parameter_group.this[0].name\n  storage_encrypted               = false", policy.RuleEncryption},
		{"database open to the internet", "modules/scheduler/network.tf",
			"description                  = \"Ringjob ${var.name} tasks\"", "description = \"anyone\"\n  cidr_ipv4 = \"0.0.0.0/0\"", policy.RuleOpenIngress},
		{"tasks open to the internet through a variable", "modules/scheduler/network.tf",
			"from_port                    = 8080\n  to_port                      = 8080\n  referenced_security_group_id = aws_security_group.alb.id",
			"from_port                    = 8080\n  to_port                      = 8080\n  cidr_ipv4 = local.alb_ingress_cidr_blocks[0]", policy.RuleOpenIngress},
		{"load balancer open on another port", "modules/scheduler/network.tf",
			"from_port         = 80\n  to_port           = 80", "from_port         = 22\n  to_port           = 22", policy.RuleOpenIngress},
		{"inline ingress from anywhere", "modules/database/main.tf",
			"  vpc_id      = var.vpc_id\n  tags        = var.tags\n}",
			"  vpc_id      = var.vpc_id\n  tags        = var.tags\n  ingress {\n    from_port   = 3306\n    to_port     = 3306\n    protocol    = \"tcp\"\n    cidr_blocks = [\"0.0.0.0/0\"]\n  }\n}", policy.RuleOpenIngress},
		{"wildcard action", "modules/scheduler/iam.tf",
			`actions   = ["lambda:InvokeFunction", "lambda:GetFunction"]`, `actions   = ["lambda:*"]`, policy.RuleIAMWildcard},
		{"wildcard action in a key policy", "modules/scheduler/alarms.tf",
			`actions   = ["kms:Decrypt", "kms:GenerateDataKey"]`, `actions   = ["kms:*"]`, policy.RuleIAMWildcard},
		{"another action beside the network-interface ones on *", "modules/functions/main.tf",
			`"ec2:DeleteNetworkInterface", `, `"ec2:DeleteNetworkInterface", "ec2:TerminateInstances", `, policy.RuleIAMWildcard},
		{"task role reads another secret", "modules/scheduler/iam.tf",
			"resources = [local.replica_password_secret_arn]\n  }\n  statement {\n    actions   = [\"kms:Decrypt\"]",
			"resources = [var.admin_token_secret_arn]\n  }\n  statement {\n    actions   = [\"kms:Decrypt\"]", policy.RuleTaskRole},
		{"wildcard resource", "modules/scheduler/iam.tf",
			"sid       = \"DecryptDatabaseSecret\"\n    actions   = [\"kms:Decrypt\"]\n    resources = [var.database.kms_key_arn]",
			"sid       = \"DecryptDatabaseSecret\"\n    actions   = [\"kms:Decrypt\"]\n    resources = [\"*\"]", policy.RuleIAMWildcard},
		{"wildcard through a variable default", "modules/scheduler/variables.tf",
			"type        = list(string)\n  default     = []\n  validation {\n    condition     = alltrue([for a in var.lambda_function_arns",
			"type        = list(string)\n  default     = [\"arn:aws:lambda:eu-central-1:123456789012:function:*\"]\n  validation {\n    condition     = alltrue([for a in var.lambda_function_arns", policy.RuleIAMWildcard},
		{"registry login together with other actions on *", "modules/scheduler/iam.tf",
			`actions   = ["ecr:GetAuthorizationToken"]`, `actions   = ["ecr:GetAuthorizationToken", "ecr:BatchGetImage"]`, policy.RuleIAMWildcard},
		{"log streams of any group", "modules/functions/main.tf",
			`resources = ["${aws_cloudwatch_log_group.this[each.key].arn}:log-stream:*"]`, `resources = ["arn:aws:logs:*:*:log-group:*"]`, policy.RuleIAMWildcard},
		{"AWS-managed policy", "modules/functions/main.tf",
			"resource \"aws_iam_role_policy\" \"logs\" {",
			"resource \"aws_iam_role_policy_attachment\" \"basic\" {\n  role       = \"x\"\n  policy_arn = \"arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole\"\n}\n\nresource \"aws_iam_role_policy\" \"logs\" {", policy.RuleIAMWildcard},
		{"hand-written JSON policy", "modules/functions/main.tf",
			"policy   = data.aws_iam_policy_document.logs[each.key].json", `policy   = jsonencode({ Statement = [] })`, policy.RuleIAMWildcard},
		{"task role reads secrets", "modules/scheduler/iam.tf",
			`actions   = ["lambda:InvokeFunction", "lambda:GetFunction"]`, `actions   = ["lambda:InvokeFunction", "secretsmanager:GetSecretValue"]`, policy.RuleTaskRole},
		{"managed policy on the task role", "modules/scheduler/iam.tf",
			"# Execution role:", "resource \"aws_iam_role_policy_attachment\" \"task_extra\" {\n  role       = aws_iam_role.task.name\n  policy_arn = \"arn:aws:iam::123456789012:policy/extra\"\n}\n\n# Execution role:", policy.RuleTaskRole},
		{"token in the plain environment", "modules/scheduler/main.tf",
			"RINGJOB_LISTEN                       = \"0.0.0.0:8080\"", "RINGJOB_LISTEN                       = \"0.0.0.0:8080\"\n    RINGJOB_ADMIN_TOKEN = \"x\"", policy.RuleSecrets},
		{"password in the database URL", "modules/scheduler/main.tf",
			"://${var.database.username}@", "://${var.database.username}:hunter2@", policy.RuleSecrets},
		{"secret from SSM", "modules/scheduler/main.tf",
			`valueFrom = var.admin_token_secret_arn`, `valueFrom = aws_ssm_parameter.admin.arn`, policy.RuleSecrets},
		{"SSM parameter", "modules/scheduler/main.tf",
			"resource \"aws_ecs_cluster\" \"this\" {", "resource \"aws_ssm_parameter\" \"admin\" {\n  name  = \"admin\"\n  type  = \"SecureString\"\n  value = \"x\"\n}\n\nresource \"aws_ecs_cluster\" \"this\" {", policy.RuleSecrets},
		{"untyped variable", "modules/functions/variables.tf",
			"  type        = string\n  default     = \"arm64\"", "  default     = \"arm64\"", policy.RuleVariables},
		{"undescribed variable", "modules/database/variables.tf",
			`description = "VPC the database lives in."`, "", policy.RuleVariables},
		{"undescribed output", "modules/functions/outputs.tf",
			`description = "Deployed name of each function, by short name."`, "", policy.RuleVariables},
		{"example skips a module", "example/main.tf",
			"module \"functions\" {\n  source      = \"../modules/functions\"", "module \"functions\" {\n  source      = \"../modules/database\"", policy.RuleExampleWiring},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyTree(t, root)
			path := filepath.Join(dir, tc.file)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Count(string(b), tc.old) != 1 {
				t.Fatalf("fixture out of date: %q occurs %d times in %s, want once", tc.old, strings.Count(string(b), tc.old), tc.file)
			}
			if err := os.WriteFile(path, []byte(strings.Replace(string(b), tc.old, tc.new, 1)), 0o644); err != nil {
				t.Fatal(err)
			}
			vs, err := policy.Check(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range vs {
				if v.Rule == tc.rule {
					t.Logf("caught: %s", v)
					return
				}
			}
			t.Errorf("rule %s not reported; got %v", tc.rule, vs)
		})
	}
}

func TestUnparsableFileIsAnError(t *testing.T) {
	dir := copyTree(t, root)
	if err := os.WriteFile(filepath.Join(dir, "modules/database/broken.tf"), []byte("resource \"x\" {\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := policy.Check(dir); err == nil || !strings.Contains(err.Error(), "broken.tf") {
		t.Fatalf("want a parse error naming broken.tf, got %v", err)
	}
}

// copyTree copies the .tf files of the tree (not .terraform, not this
// package) into a temporary directory.
func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".terraform" || d.Name() == "policy") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".tf") {
			return nil
		}
		rel, _ := filepath.Rel(src, path)
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		out := filepath.Join(dst, rel)
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		return os.WriteFile(out, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}
