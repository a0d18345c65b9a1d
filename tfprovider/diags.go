package tfprovider

import (
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"

	"github.com/ringjob/ringjob/client"
)

// fieldIndex reads the REST API's field names: "schedule_conf",
// "child_job_ids[2]".
var fieldIndex = regexp.MustCompile(`^([a-z_]+)(?:\[(\d+)\])?$`)

// addAPIError adds err as a diagnostic. An error of the server that names
// a field the resource has as an attribute is put on that attribute (on
// the list element, for "members[1]"), so Terraform shows it at the line
// of the configuration at fault; attrs are the resource's attribute names.
func addAPIError(d *diag.Diagnostics, doing string, err error, attrs map[string]bool) {
	var e *client.Error
	if !errors.As(err, &e) {
		d.AddError("Cannot "+doing, err.Error())
		return
	}
	summary := "Cannot " + doing
	detail := e.Message
	switch e.Status {
	case http.StatusPreconditionFailed:
		summary = "Cannot " + doing + ": it was changed outside Terraform"
		detail = "The server refused the change because the object was edited (in the console, the CLI, `ringjob apply` or the API) after Terraform last read it, and Terraform does not overwrite edits it has not seen. " +
			"Run `terraform plan` again to see the change, then apply.\n\nServer: " + e.Message
	case http.StatusForbidden:
		detail = e.Message + "\n\nThe provider's token lacks the permission; give its user or service account a role that has it (ringjob_role_binding)."
	}
	if e.RequestID != "" {
		detail += fmt.Sprintf(" (request %s)", e.RequestID)
	}
	if m := fieldIndex.FindStringSubmatch(e.Field); m != nil && attrs[m[1]] {
		p := path.Root(m[1])
		if m[2] != "" {
			i, _ := strconv.Atoi(m[2])
			p = p.AtListIndex(i)
		}
		d.AddAttributeError(p, summary, detail)
		return
	}
	if e.Field != "" && e.Status != http.StatusPreconditionFailed { // If-Match is ours, not the user's
		detail = e.Field + ": " + detail
	}
	d.AddError(summary, detail)
}

// parseID reads a Terraform id (a decimal number) of what.
func parseID(s, what string) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%q is not the id of a %s: ids are positive whole numbers", s, what)
	}
	return n, nil
}

func formatID(n int64) string { return strconv.FormatInt(n, 10) }

// configuredClient takes the client Configure left in the provider data;
// nil data (the provider is not configured yet, as in validate) is no error.
func configuredClient(data any, d *diag.Diagnostics) *client.Client {
	if data == nil {
		return nil
	}
	c, ok := data.(*client.Client)
	if !ok {
		d.AddError("Unexpected provider data", fmt.Sprintf("expected *client.Client, got %T; this is a bug in the provider", data))
	}
	return c
}

// needClient reports the provider was not configured with a server (its
// settings were unknown) where a server is needed.
func needClient(c *client.Client, d *diag.Diagnostics) bool {
	if c == nil {
		d.AddError("The ringjob provider has no server",
			"The provider's url or token were not known when it was configured; they must be known before any ringjob resource is created, changed or read.")
		return false
	}
	return true
}
