package apitypes

// Group is a group of targets (GET /api/v1/groups/{id}).
type Group struct {
	ID      int64    `json:"id"`
	AppName string   `json:"app_name"`
	Title   string   `json:"title"`
	Members []string `json:"members"`
	// ExecutorTokenSet tells whether the group has its own executor token;
	// the token itself is never shown back.
	ExecutorTokenSet bool   `json:"executor_token_set"`
	Protocol         string `json:"protocol"`
	// AcceptRegistrations tells whether HTTP executors may register into the group.
	AcceptRegistrations bool `json:"accept_registrations"`
	// FailureDestination receives the failure records of the group's jobs
	// that have none of their own (apitypes.JobOptions); "" = none.
	FailureDestination string  `json:"failure_destination"`
	CreatedAt          *string `json:"created_at"`
	UpdatedAt          *string `json:"updated_at"`

	// ETag is the group's version from the ETag header, for If-Match; a
	// client fills it in, it is not part of the body.
	ETag string `json:"-"`
}

// GroupInput is the body of POST /api/v1/groups and PUT /api/v1/groups/{id}.
type GroupInput struct {
	AppName             string   `json:"app_name"`
	Title               string   `json:"title"`   // always sent: PUT replaces it
	Members             []string `json:"members"` // always sent: PUT replaces it
	ExecutorToken       string   `json:"executor_token,omitempty"`
	Protocol            string   `json:"protocol,omitempty"`
	AcceptRegistrations *bool    `json:"accept_registrations,omitempty"`
	// FailureDestination: omitted keeps the group's (on update); "" clears it.
	FailureDestination *string `json:"failure_destination,omitempty"`
}

// Page is one page of a list; NextCursor is "" on the last page.
type Page[T any] struct {
	Items      []T    `json:"items"`
	NextCursor string `json:"next_cursor"`
}
