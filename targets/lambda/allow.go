package lambda

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"
)

// ErrFunctionNotAllowed is a target outside Config.AllowedFunctions.
var ErrFunctionNotAllowed = errors.New("function is not in lambda.allowed_functions")

var accountRE = regexp.MustCompile(`^\d{12}$`)

// allowList is Config.AllowedFunctions, parsed. Entries are:
//   - an account id (123456789012): any function ARN of that account;
//   - an ARN pattern (arn:aws:lambda:us-east-1:123456789012:function:billing-*):
//     function ARNs it matches ('*' matches any run of characters but ':');
//   - a name pattern (billing-close, billing-*): lambda://REGION/NAME targets,
//     which always name a function of the scheduler's own account.
//
// Empty, every lambda://REGION/NAME target is allowed (the scheduler's own
// account, bounded by its IAM role) and no ARN is: an ARN can name any
// account's function, so ARNs must be allowed by account or pattern.
type allowList struct {
	accounts map[string]bool
	arns     []string
	names    []string
}

func parseAllowList(entries []string) (allowList, error) {
	a := allowList{accounts: map[string]bool{}}
	var errs []error
	for i, e := range entries {
		e = strings.TrimSpace(e)
		switch {
		case accountRE.MatchString(e):
			a.accounts[e] = true
		case strings.HasPrefix(e, "arn:"):
			if _, err := path.Match(e, ""); err != nil || !strings.Contains(e, ":lambda:") || !strings.Contains(e, ":function:") {
				errs = append(errs, fmt.Errorf("lambda.allowed_functions[%d]: %q is not a Lambda function ARN pattern (arn:aws:lambda:REGION:ACCOUNT:function:NAME, '*' allowed)", i, e))
				continue
			}
			a.arns = append(a.arns, e)
		default:
			if _, err := path.Match(e, ""); err != nil || e == "" || strings.ContainsAny(e, ":/") {
				errs = append(errs, fmt.Errorf("lambda.allowed_functions[%d]: %q is not an account id, a function ARN pattern or a function name pattern (billing-*)", i, e))
				continue
			}
			a.names = append(a.names, e)
		}
	}
	return a, errors.Join(errs...)
}

func (a allowList) empty() bool { return len(a.accounts) == 0 && len(a.arns) == 0 && len(a.names) == 0 }

// check allows or refuses a parsed target.
func (a allowList) check(t target) error {
	if !strings.HasPrefix(t.function, "arn:") {
		if len(a.names) == 0 && a.empty() {
			return nil
		}
		for _, p := range a.names {
			if ok, _ := path.Match(p, t.name); ok {
				return nil
			}
		}
		return fmt.Errorf("%w: %q matches no function name pattern there", ErrFunctionNotAllowed, t.raw)
	}
	parts := strings.Split(t.function, ":") // arn:PARTITION:lambda:REGION:ACCOUNT:function:NAME
	if a.accounts[parts[4]] {
		return nil
	}
	for _, p := range a.arns {
		if ok, _ := path.Match(p, t.function); ok {
			return nil
		}
		if t.qualifier != "" {
			if ok, _ := path.Match(p, t.function+":"+t.qualifier); ok {
				return nil
			}
		}
	}
	return fmt.Errorf("%w: %q (account %s) is allowed by no account id or ARN pattern there", ErrFunctionNotAllowed, t.raw, parts[4])
}
