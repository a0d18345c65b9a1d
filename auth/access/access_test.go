package access_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/auth/access"
)

func TestPrincipalRolesPerGroup(t *testing.T) {
	p := access.NewPrincipal(access.Principal{ID: 7, Name: "alice", Kind: access.KindUser}, []access.Binding{
		{Role: access.RoleViewer, GroupID: 1},
		{Role: access.RoleOwner, GroupID: 1}, // the most powerful role per group wins
		{Role: access.RoleOperator, GroupID: 2},
	})
	require.False(t, p.IsAdmin())
	require.True(t, p.Can(access.PermJobsWrite, 1))
	require.False(t, p.Can(access.PermJobsWrite, 2))
	require.True(t, p.Can(access.PermRunsKill, 2))
	require.False(t, p.Can(access.PermJobsRead, 3))
	require.False(t, p.Can(access.PermUsersManage, 0), "group roles never grant system permissions")
	ids, all := p.GroupsWith(access.PermJobsOperate)
	require.False(t, all)
	require.Equal(t, []int64{1, 2}, ids)
	ids, _ = p.GroupsWith(access.PermGroupsEdit)
	require.Equal(t, []int64{1}, ids)

	err := p.Check(access.PermJobsWrite, 2)
	var d *access.Denied
	require.ErrorAs(t, err, &d)
	require.Equal(t, access.PermJobsWrite, d.Perm)
	require.Contains(t, err.Error(), "jobs.write on group 2")

	admin := access.NewPrincipal(access.Principal{}, []access.Binding{{Role: access.RoleAdmin}})
	require.True(t, admin.Can(access.PermAuditRead, 0))
	require.True(t, admin.Can(access.PermJobsWrite, 99))
	_, all = admin.GroupsWith(access.PermJobsRead)
	require.True(t, all)

	none := access.NewPrincipal(access.Principal{}, nil)
	require.False(t, none.CanSomewhere(access.PermGroupsRead))
}

func TestParseRole(t *testing.T) {
	for _, r := range access.AllRoles {
		got, err := access.ParseRole(string(r))
		require.NoError(t, err)
		require.Equal(t, r, got)
	}
	_, err := access.ParseRole("superuser")
	require.ErrorContains(t, err, "admin, owner, operator, viewer")
}

func TestPasswords(t *testing.T) {
	require.ErrorContains(t, access.CheckPassword("short"), "at least 12")
	require.ErrorContains(t, access.CheckPassword(strings.Repeat("x", 257)), "at most 256")
	require.ErrorContains(t, access.CheckPassword("bad\xffpassword-long"), "UTF-8")
	require.NoError(t, access.CheckPassword("twelve chars"))

	h1, err := access.HashPassword("correct horse battery")
	require.NoError(t, err)
	h2, err := access.HashPassword("correct horse battery")
	require.NoError(t, err)
	require.NotEqual(t, h1, h2, "a salt per hash")
	require.True(t, strings.HasPrefix(h1, "$argon2id$v=19$m=65536,t=3,p=2$"))
	require.NotContains(t, h1, "correct horse")
	require.NoError(t, access.VerifyPassword(h1, "correct horse battery"))
	require.ErrorIs(t, access.VerifyPassword(h1, "correct horse batterY"), access.ErrPasswordMismatch)
	require.Error(t, access.VerifyPassword("$2a$10$bcrypt", "x"))
	require.ErrorIs(t, access.VerifyPassword(access.DummyHash(), "anything at all"), access.ErrPasswordMismatch)

	pw, err := access.GeneratePassword()
	require.NoError(t, err)
	require.NoError(t, access.CheckPassword(pw))
}
