package kind

// Role is a named set of permissions a role binding grants. The
// permissions each role holds are auth/access's; the names are here so
// the clients of the REST API check them against the same constants.
type Role string

// The roles. RoleAdmin is global; the others are held per group.
const (
	RoleAdmin    Role = "admin"
	RoleOwner    Role = "owner"
	RoleOperator Role = "operator"
	RoleViewer   Role = "viewer"
)

// Roles lists every role, from the most to the least powerful.
var Roles = []Role{RoleAdmin, RoleOwner, RoleOperator, RoleViewer}

// Valid reports whether r is a known role.
func (r Role) Valid() bool {
	for _, k := range Roles {
		if r == k {
			return true
		}
	}
	return false
}
