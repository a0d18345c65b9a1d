package main

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/ringjob/ringjob/auth/sso"

	"github.com/spf13/pflag"

	"github.com/ringjob/ringjob/alarm"
	"github.com/ringjob/ringjob/internal/egress"
	"github.com/ringjob/ringjob/internal/secretbox"
	"github.com/ringjob/ringjob/maintenance/reports"
	"github.com/ringjob/ringjob/maintenance/retention"
	"github.com/ringjob/ringjob/scheduler"
	"github.com/ringjob/ringjob/targets/localexec"
)

// The values of database_migrations.
const (
	migrationsAuto     = "auto"
	migrationsExternal = "external"
)

// The values of database_tls_mode.
const (
	dbTLSDisable    = "disable"     // plaintext
	dbTLSRequire    = "require"     // encrypted, the certificate not checked
	dbTLSVerifyFull = "verify-full" // encrypted, certificate checked against a CA and the host name
)

// Config is the whole server configuration. It is read from a YAML file,
// then RINGJOB_* environment variables, then flags (later wins); this file is
// the only place that maps them onto the component configs.
type Config struct {
	// DatabaseURL: sqlite://PATH (default sqlite://./data/ringjob.db),
	// mysql://USER:PASS@HOST:PORT/DB or postgres://USER:PASS@HOST:PORT/DB
	// (postgresql:// too). Env RINGJOB_DATABASE_URL; env
	// RINGJOB_DATABASE_PASSWORD supplies the password of a mysql://USER@...
	// or postgres://USER@... URL that has none.
	DatabaseURL string `yaml:"database_url"`
	// DatabaseMigrations: "auto" (the default) migrates the database at
	// start; "external" leaves that to `ringjob migrate`, run once before
	// the replicas are updated, and waits while migrations are pending.
	// Either way a replica refuses a schema newer than it knows. Env
	// RINGJOB_DATABASE_MIGRATIONS.
	DatabaseMigrations string `yaml:"database_migrations"`
	// DatabasePasswordSecretARN: a Secrets Manager secret (a JSON with a
	// "password" key, as RDS manages it, or a plain string) the MySQL
	// password is read from again whenever the database refuses the one in
	// use, so a rotated password is picked up without a restart. The first
	// password tried is RINGJOB_DATABASE_PASSWORD's, if set. Env
	// RINGJOB_DATABASE_PASSWORD_SECRET_ARN.
	DatabasePasswordSecretARN string `yaml:"database_password_secret_arn"`
	// DatabaseTLSMode: how MySQL connections are encrypted: "disable",
	// "require" (encrypted, the server's certificate not checked) or
	// "verify-full" (the certificate must be signed by a CA of
	// database_tls_ca_file, or of the system's CAs without it, and name the
	// URL's host). Empty: verify-full when database_tls_ca_file is set,
	// else the URL's own tls parameter decides (none: plaintext). Env
	// RINGJOB_DATABASE_TLS_MODE.
	DatabaseTLSMode string `yaml:"database_tls_mode"`
	// DatabaseTLSCAFile: a PEM file of the CA certificates the database's
	// certificate is checked against (on RDS, Amazon's RDS CA bundle). Env
	// RINGJOB_DATABASE_TLS_CA_FILE.
	DatabaseTLSCAFile string `yaml:"database_tls_ca_file"`
	// Listen is the address of the REST API, executor API and metrics
	// (default 127.0.0.1:8080). Env RINGJOB_LISTEN.
	Listen string `yaml:"listen"`
	// PublicURL is how users and executors reach this server (for messages;
	// default http://LISTEN).
	PublicURL string          `yaml:"public_url"`
	TLS       TLSConfig       `yaml:"tls"`
	Log       LogConfig       `yaml:"log"`
	API       APIConfig       `yaml:"api"`
	Auth      AuthConfig      `yaml:"auth"`
	Executors ExecutorsConfig `yaml:"executors"`
	Lambda    LambdaConfig    `yaml:"lambda"`
	// Alarms declares the alarm channels jobs may name (email, webhook,
	// slack, dingtalk, wecom, feishu); see alarm/doc.go.
	Alarms alarm.Config `yaml:"alarms"`
	// Secrets is the key that encrypts the secrets kept in the database.
	Secrets SecretsConfig `yaml:"secrets"`
	// Outbound is the policy for the addresses the server calls (HTTP
	// executors, alarm webhooks); see internal/egress and docs/security.md.
	Outbound egress.Config `yaml:"outbound"`
	// Scheduler tunes the scheduler core; see scheduler.Config.
	Scheduler scheduler.Config `yaml:"scheduler"`
	// Local declares the commands local:// targets may run.
	Local LocalConfig `yaml:"local"`
	// Retention deletes finished runs and logs past their age; see
	// retention.Config and docs/retention.md.
	Retention retention.Config `yaml:"retention"`
	// Reports keeps the aggregated run counts the stats endpoint reads; see
	// reports.Config.
	Reports reports.Config `yaml:"reports"`
	// Bootstrap creates groups and jobs at start when they do not exist yet
	// (matched by app name and job name); existing ones are left alone.
	Bootstrap Bootstrap `yaml:"bootstrap"`
}

// TLSConfig makes the server terminate TLS itself (for deployments without
// a load balancer in front). The files are read again when they change, so
// a renewed certificate needs no restart.
type TLSConfig struct {
	CertFile string `yaml:"cert_file"` // PEM certificate chain. Env RINGJOB_TLS_CERT_FILE.
	KeyFile  string `yaml:"key_file"`  // PEM private key. Env RINGJOB_TLS_KEY_FILE.
}

// SecretsConfig holds the keys that seal group executor tokens, the
// generated executor token and the run-token secret in the database
// (AES-256-GCM; see docs/security.md for rotation).
type SecretsConfig struct {
	// Key is 32 bytes in base64 (`openssl rand -base64 32`). Empty: those
	// secrets are stored in plaintext (a warning says so at start). Env
	// RINGJOB_SECRETS_KEY.
	Key string `yaml:"key"`
	// PreviousKeys still open values sealed before a rotation; values are
	// sealed again with Key at start. Env RINGJOB_SECRETS_PREVIOUS_KEYS
	// (comma-separated).
	PreviousKeys []string `yaml:"previous_keys"`
}

// box builds the sealing box of the keys (nil when no key is set).
func (s SecretsConfig) box() (*secretbox.Box, error) {
	if s.Key == "" {
		if len(s.PreviousKeys) > 0 {
			return nil, fmt.Errorf("secrets.previous_keys needs secrets.key (the key that seals from now on)")
		}
		return nil, nil
	}
	cur, err := secretbox.ParseKey(s.Key)
	if err != nil {
		return nil, fmt.Errorf("secrets.key: %w", err)
	}
	var prev [][]byte
	for i, k := range s.PreviousKeys {
		b, err := secretbox.ParseKey(k)
		if err != nil {
			return nil, fmt.Errorf("secrets.previous_keys[%d]: %w", i, err)
		}
		prev = append(prev, b)
	}
	return secretbox.New(cur, prev...)
}

// LogConfig selects the log level and format.
type LogConfig struct {
	Level  string `yaml:"level"`  // debug, info (default), warn, error. Env RINGJOB_LOG_LEVEL.
	Format string `yaml:"format"` // text (default) or json. Env RINGJOB_LOG_FORMAT.
}

// APIConfig configures the REST API.
type APIConfig struct {
	// AdminToken is an API token with admin rights. When empty and the
	// database has no token yet, one is generated at first start and printed
	// once; only its hash is stored. Env RINGJOB_ADMIN_TOKEN.
	AdminToken string `yaml:"admin_token"`
	// BodyLimitBytes caps request bodies (default 1 MiB).
	BodyLimitBytes int `yaml:"body_limit_bytes"`
	// Pprof serves Go's runtime profiles at /debug/pprof/ to admin API
	// tokens, for profiling a slow server (`go tool pprof -http=:0
	// 'http://HOST/debug/pprof/profile?seconds=20'` with the Authorization
	// header). Off by default. Env RINGJOB_PPROF=true.
	Pprof bool `yaml:"pprof"`
	// TrustedProxies are the CIDRs of the reverse proxies in front of the
	// server (the TLS proxy): from them, and only from them,
	// X-Forwarded-For says who the client is (read from the right, skipping
	// trusted proxies). The login limiter and the audit log key on that
	// address. Empty: the TCP peer is the client.
	TrustedProxies []string `yaml:"trusted_proxies"`
	// HashConcurrency bounds the password checks (argon2id, 64 MiB each)
	// running at once (default 2); a login beyond it is answered 503 at once.
	HashConcurrency int `yaml:"hash_concurrency"`
}

// AuthConfig configures browser sessions and single sign-on.
type AuthConfig struct {
	// SessionIdle ends a browser session unused for this long (default 30m).
	SessionIdle time.Duration `yaml:"session_idle"`
	// SessionMax ends a browser session this long after login (default 12h).
	SessionMax time.Duration `yaml:"session_max"`
	// SSO configures OIDC single sign-on; off when issuer_url is empty. Env
	// RINGJOB_SSO_CLIENT_SECRET sets the client secret.
	SSO sso.Config `yaml:"sso"`
}

// trustedProxies parses api.trusted_proxies (checked by Validate); a bare
// address is a /32 or /128.
func (c APIConfig) trustedProxies() []netip.Prefix {
	var out []netip.Prefix
	for _, p := range c.TrustedProxies {
		p = strings.TrimSpace(p)
		if pre, err := netip.ParsePrefix(p); err == nil {
			out = append(out, pre.Masked())
		} else if a, err := netip.ParseAddr(p); err == nil {
			out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
		}
	}
	return out
}

// ExecutorsConfig configures HTTP executors (XXL-JOB protocol).
type ExecutorsConfig struct {
	// AccessToken is the global XXL-JOB-ACCESS-TOKEN executors and server
	// exchange. When empty, one is generated at first start, kept in the
	// database for all replicas, and printed. Env RINGJOB_EXECUTOR_TOKEN.
	AccessToken string `yaml:"access_token"`
	// ConnectTimeout and RequestTimeout bound calls to executors (defaults 3s, 10s).
	ConnectTimeout time.Duration `yaml:"connect_timeout"`
	RequestTimeout time.Duration `yaml:"request_timeout"`
	// MaxConnectionsPerExecutor bounds the keep-alive connections the server
	// keeps to one executor address (default 64); dispatches beyond it wait
	// for a free connection.
	MaxConnectionsPerExecutor int `yaml:"max_connections_per_executor"`
	// AllowCrossGroupMembers lets a group list, as a static member, an
	// address that an executor of another group registered (default false:
	// refused when the group is saved and when a run would be sent there).
	// Runs sent there carry their own group's token either way.
	AllowCrossGroupMembers bool `yaml:"allow_cross_group_members"`
}

// LambdaConfig configures lambda:// targets (and function ARNs).
type LambdaConfig struct {
	// Endpoint overrides the Lambda endpoint (an emulator or LocalStack);
	// empty uses AWS. Credentials come from the default AWS chain. Env
	// RINGJOB_LAMBDA_ENDPOINT.
	Endpoint string `yaml:"endpoint"`
	// AllowedFunctions limits the functions lambda:// targets and ARNs may
	// name: account ids (123456789012), function ARN patterns
	// (arn:aws:lambda:*:123456789012:function:billing-*) and function name
	// patterns (billing-*). Empty: function names only (the scheduler's own
	// account), no ARN. Checked when a group or job is saved and at dispatch.
	// Env RINGJOB_LAMBDA_ALLOWED_FUNCTIONS (comma-separated).
	AllowedFunctions []string `yaml:"allowed_functions"`
	// Mode is the default invocation mode: sync (RequestResponse, default)
	// or event; a target may choose with ?mode=.
	Mode string `yaml:"mode"`
	// Emulator, when it lists functions, starts Ringjob's Lambda emulator
	// inside the server and points lambda:// targets at it (for trying
	// functions without an AWS account; not for production).
	Emulator EmulatorConfig `yaml:"emulator"`
}

// EmulatorConfig describes the in-process Lambda emulator.
type EmulatorConfig struct {
	Listen    string             `yaml:"listen"` // default 127.0.0.1:0
	Region    string             `yaml:"region"` // default us-east-1
	Functions []EmulatorFunction `yaml:"functions"`
}

// EmulatorFunction is one function binary (an aws-lambda-go bootstrap built
// for this machine).
type EmulatorFunction struct {
	Name    string        `yaml:"name"`
	Path    string        `yaml:"path"`
	Timeout time.Duration `yaml:"timeout"` // default 30s
	// MaxConcurrency is how many invocations run at once, one process each
	// (default 10); QueueSize how many synchronous invocations may wait for a
	// free process (default 0: throttled at once, as AWS).
	MaxConcurrency int `yaml:"max_concurrency"`
	QueueSize      int `yaml:"queue_size"`
}

// LocalConfig declares local commands (mapped onto localexec.Config).
type LocalConfig struct {
	KillGrace   time.Duration  `yaml:"kill_grace"`    // SIGTERM -> SIGKILL grace (default 5s)
	LogCapBytes int            `yaml:"log_cap_bytes"` // per-run output cap (default 1 MiB)
	InheritEnv  bool           `yaml:"inherit_env"`   // pass the server's environment to commands
	Commands    []LocalCommand `yaml:"commands"`
}

// LocalCommand is one command a local://NAME target may run.
type LocalCommand struct {
	Name           string            `yaml:"name"`
	Argv           []string          `yaml:"argv"`
	Env            map[string]string `yaml:"env"`
	Dir            string            `yaml:"dir"`
	MaxConcurrency int               `yaml:"max_concurrency"`
	ParamsAsArg    bool              `yaml:"params_as_arg"` // params after "--" as the last argument
	ParamsArg      string            `yaml:"params_arg"`    // params in one last argument from a template such as "--message={params}"
	ParamsStdin    bool              `yaml:"params_stdin"`  // params on standard input
}

// Bootstrap lists groups and jobs to create when absent.
type Bootstrap struct {
	Groups []BootstrapGroup `yaml:"groups"`
	Jobs   []BootstrapJob   `yaml:"jobs"`
}

// BootstrapGroup is a group to create.
type BootstrapGroup struct {
	AppName string   `yaml:"app_name"`
	Title   string   `yaml:"title"`
	Members []string `yaml:"members"`
	// AcceptRegistrations: omitted = true unless every member is a
	// lambda:// or local:// target (see docs/security.md).
	AcceptRegistrations *bool `yaml:"accept_registrations"`
}

// BootstrapJob is a job to create, in the group with app name Group.
type BootstrapJob struct {
	Group         string `yaml:"group"`
	Name          string `yaml:"name"`
	ScheduleType  string `yaml:"schedule_type"`
	ScheduleConf  string `yaml:"schedule_conf"`
	TimeZone      string `yaml:"time_zone"`
	Handler       string `yaml:"handler"`
	Params        string `yaml:"params"`
	TimeoutSec    int    `yaml:"timeout_sec"`
	MisfirePolicy string `yaml:"misfire_policy"`
	Enabled       bool   `yaml:"enabled"`
}

// defaults fills what the file, env and flags left empty.
func (c *Config) defaults() {
	if c.DatabaseURL == "" {
		c.DatabaseURL = "sqlite://./data/ringjob.db"
	}
	if c.DatabaseMigrations == "" {
		c.DatabaseMigrations = migrationsAuto
	}
	if c.Listen == "" {
		c.Listen = "127.0.0.1:8080"
	}
	if c.PublicURL == "" {
		c.PublicURL = "http://" + c.Listen
		if c.TLS.CertFile != "" {
			c.PublicURL = "https://" + c.Listen
		}
	}
	if c.Log.Level == "" {
		c.Log.Level = "info"
	}
	if c.Log.Format == "" {
		c.Log.Format = "text"
	}
	if c.API.BodyLimitBytes == 0 {
		c.API.BodyLimitBytes = 1 << 20
	}
	c.Scheduler = c.Scheduler.WithDefaults()
	c.Retention = c.Retention.WithDefaults()
	c.Reports = c.Reports.WithDefaults()
}

// Validate reports every invalid field, by its YAML name.
func (c *Config) Validate() error {
	var errs []error
	if !strings.HasPrefix(c.DatabaseURL, "sqlite://") && !isServerURL(c.DatabaseURL) {
		errs = append(errs, fmt.Errorf("database_url must be sqlite://PATH, mysql://USER:PASS@HOST:PORT/DB or postgres://USER:PASS@HOST:PORT/DB"))
	}
	switch c.DatabaseMigrations {
	case migrationsAuto, migrationsExternal:
	default:
		errs = append(errs, fmt.Errorf("database_migrations must be %s or %s, got %q", migrationsAuto, migrationsExternal, c.DatabaseMigrations))
	}
	if c.DatabasePasswordSecretARN != "" && !isServerURL(c.DatabaseURL) {
		errs = append(errs, fmt.Errorf("database_password_secret_arn needs a mysql:// or postgres:// database_url"))
	}
	errs = append(errs, c.validateDatabaseTLS()...)
	if (c.TLS.CertFile == "") != (c.TLS.KeyFile == "") {
		errs = append(errs, fmt.Errorf("tls.cert_file and tls.key_file go together: set both or neither"))
	}
	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("log.level must be debug, info, warn or error, got %q", c.Log.Level))
	}
	switch c.Log.Format {
	case "text", "json":
	default:
		errs = append(errs, fmt.Errorf("log.format must be text or json, got %q", c.Log.Format))
	}
	if c.Auth.SessionIdle < 0 || c.Auth.SessionMax < 0 {
		errs = append(errs, fmt.Errorf("auth.session_idle and auth.session_max must not be negative"))
	}
	if err := c.Auth.SSO.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.API.BodyLimitBytes < 1024 {
		errs = append(errs, fmt.Errorf("api.body_limit_bytes must be at least 1024, got %d", c.API.BodyLimitBytes))
	}
	for i, p := range c.API.TrustedProxies {
		if _, err := netip.ParsePrefix(strings.TrimSpace(p)); err != nil {
			if _, aerr := netip.ParseAddr(strings.TrimSpace(p)); aerr != nil {
				errs = append(errs, fmt.Errorf("api.trusted_proxies[%d]: %q is not a CIDR such as 10.0.0.0/8 or an address", i, p))
			}
		}
	}
	if c.API.HashConcurrency < 0 || c.API.HashConcurrency > 64 {
		errs = append(errs, fmt.Errorf("api.hash_concurrency must be 0..64 (0 = 2), got %d", c.API.HashConcurrency))
	}
	if t := c.API.AdminToken; t != "" && len(t) < 32 {
		errs = append(errs, fmt.Errorf("api.admin_token must be at least 32 characters (`openssl rand -base64 32`), or empty to generate one"))
	}
	if t := c.Executors.AccessToken; t != "" && (len(t) < 16 || t == "default_token") {
		errs = append(errs, fmt.Errorf("executors.access_token must be at least 16 characters and not XXL-JOB's shipped default_token"))
	}
	if c.Executors.ConnectTimeout < 0 || c.Executors.RequestTimeout < 0 {
		errs = append(errs, fmt.Errorf("executors.connect_timeout and executors.request_timeout must not be negative"))
	}
	if n := c.Executors.MaxConnectionsPerExecutor; n < 0 || n > 10000 {
		errs = append(errs, fmt.Errorf("executors.max_connections_per_executor must be between 1 and 10000 (0 = default 64), got %d", n))
	}
	switch c.Lambda.Mode {
	case "", "sync", "event":
	default:
		errs = append(errs, fmt.Errorf("lambda.mode must be sync or event, got %q", c.Lambda.Mode))
	}
	for i, f := range c.Lambda.Emulator.Functions {
		if f.Name == "" || f.Path == "" {
			errs = append(errs, fmt.Errorf("lambda.emulator.functions[%d] needs a name and a path", i))
		}
	}
	if len(c.Alarms.Channels) > 0 {
		if err := c.Alarms.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if _, err := c.Secrets.box(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Outbound.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Scheduler.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Retention.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.Retention.Partitioned && !isServerURL(c.DatabaseURL) {
		errs = append(errs, fmt.Errorf("retention.partitioned needs MySQL/MariaDB or PostgreSQL (database_url mysql://... or postgres://...); SQLite purges by rows"))
	}
	if err := c.Reports.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.localexec().Validate(); err != nil {
		errs = append(errs, fmt.Errorf("local: %w", err))
	}
	return errors.Join(errs...)
}

// localexec maps the local section onto the driver's config.
func (c *Config) localexec() localexec.Config {
	out := localexec.Config{KillGrace: c.Local.KillGrace, LogCapBytes: c.Local.LogCapBytes, InheritEnv: c.Local.InheritEnv}
	for _, lc := range c.Local.Commands {
		out.Commands = append(out.Commands, localexec.Command{Name: lc.Name, Argv: lc.Argv, Env: lc.Env, Dir: lc.Dir,
			MaxConcurrency: lc.MaxConcurrency, ParamsAsArg: lc.ParamsAsArg, ParamsArg: lc.ParamsArg, ParamsStdin: lc.ParamsStdin})
	}
	return out
}

// loadConfig reads the file (if any), then the environment, then flags.
func loadConfig(path string, getenv func(string) string, fl *flagValues) (*Config, error) {
	c := &Config{}
	if path == "" {
		path = getenv("RINGJOB_CONFIG")
	}
	if path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("read config: %w", err)
		}
		if err := decodeYAMLStrict(b, c); err != nil {
			return nil, fmt.Errorf("config %s:\n%w", path, err)
		}
	}
	str := func(dst *string, env string) {
		if v := getenv(env); v != "" {
			*dst = v
		}
	}
	str(&c.DatabaseURL, "RINGJOB_DATABASE_URL")
	str(&c.DatabaseMigrations, "RINGJOB_DATABASE_MIGRATIONS")
	str(&c.DatabasePasswordSecretARN, "RINGJOB_DATABASE_PASSWORD_SECRET_ARN")
	str(&c.DatabaseTLSMode, "RINGJOB_DATABASE_TLS_MODE")
	str(&c.DatabaseTLSCAFile, "RINGJOB_DATABASE_TLS_CA_FILE")
	str(&c.Listen, "RINGJOB_LISTEN")
	str(&c.PublicURL, "RINGJOB_PUBLIC_URL")
	str(&c.Log.Level, "RINGJOB_LOG_LEVEL")
	str(&c.Log.Format, "RINGJOB_LOG_FORMAT")
	str(&c.API.AdminToken, "RINGJOB_ADMIN_TOKEN")
	str(&c.Auth.SSO.ClientSecret, "RINGJOB_SSO_CLIENT_SECRET")
	str(&c.Executors.AccessToken, "RINGJOB_EXECUTOR_TOKEN")
	str(&c.Lambda.Endpoint, "RINGJOB_LAMBDA_ENDPOINT")
	str(&c.Secrets.Key, "RINGJOB_SECRETS_KEY")
	if v := getenv("RINGJOB_SECRETS_PREVIOUS_KEYS"); v != "" {
		c.Secrets.PreviousKeys = strings.Split(v, ",")
	}
	str(&c.Scheduler.NodeID, "RINGJOB_NODE_ID")
	str(&c.TLS.CertFile, "RINGJOB_TLS_CERT_FILE")
	str(&c.TLS.KeyFile, "RINGJOB_TLS_KEY_FILE")
	if v := getenv("RINGJOB_LAMBDA_ALLOWED_FUNCTIONS"); v != "" {
		c.Lambda.AllowedFunctions = nil
		for _, f := range strings.Split(v, ",") {
			if f = strings.TrimSpace(f); f != "" {
				c.Lambda.AllowedFunctions = append(c.Lambda.AllowedFunctions, f)
			}
		}
	}
	if v := getenv("RINGJOB_PPROF"); v != "" {
		on, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("RINGJOB_PPROF: %q is not true or false", v)
		}
		c.API.Pprof = on
	}
	if v := getenv("RINGJOB_STOP_GRACE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return nil, fmt.Errorf("RINGJOB_STOP_GRACE: %q is not a duration (e.g. 30s)", v)
		}
		c.Scheduler.StopGrace = d
	}
	if v := getenv("RINGJOB_LOCK_PARTITIONS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return nil, fmt.Errorf("RINGJOB_LOCK_PARTITIONS: %q is not a number", v)
		}
		c.Scheduler.LockPartitions = n
	}
	if fl != nil {
		fl.apply(c)
	}
	// The password alone may come from its own variable (a container
	// platform's secret store), so the URL itself holds no secret.
	if pw := getenv("RINGJOB_DATABASE_PASSWORD"); pw != "" {
		u, err := withPassword(c.DatabaseURL, pw)
		if err != nil {
			return nil, err
		}
		c.DatabaseURL = u
	}
	c.defaults()
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("invalid configuration:\n%w", err)
	}
	return c, nil
}

// isServerURL reports whether a database URL names a database server
// (MySQL/MariaDB or PostgreSQL), not an SQLite file.
func isServerURL(u string) bool {
	return strings.HasPrefix(u, "mysql://") || isPostgresURL(u)
}

// isPostgresURL reports whether a database URL names PostgreSQL.
func isPostgresURL(u string) bool {
	return strings.HasPrefix(u, "postgres://") || strings.HasPrefix(u, "postgresql://")
}

// withPassword puts pw into a mysql:// or postgres:// URL that has a user.
func withPassword(dbURL, pw string) (string, error) {
	u, err := url.Parse(dbURL)
	if err != nil || !isServerURL(dbURL) || u.User == nil || u.User.Username() == "" {
		return "", fmt.Errorf("RINGJOB_DATABASE_PASSWORD is set: database_url must then be mysql://USER@HOST:PORT/DB or postgres://USER@HOST:PORT/DB")
	}
	if _, has := u.User.Password(); has {
		return "", fmt.Errorf("RINGJOB_DATABASE_PASSWORD is set and database_url has a password too: keep one")
	}
	u.User = url.UserPassword(u.User.Username(), pw)
	return u.String(), nil
}

// flagValues are the command-line overrides of `ringjob server`.
type flagValues struct {
	config, databaseURL, listen, logLevel, logFormat string
}

func (f *flagValues) register(fs *pflag.FlagSet) {
	f.registerStore(fs)
	fs.StringVar(&f.listen, "listen", "", "API listen address (env RINGJOB_LISTEN, default 127.0.0.1:8080)")
}

// registerStore registers the flags of commands that use the database but
// serve nothing (migrate).
func (f *flagValues) registerStore(fs *pflag.FlagSet) {
	fs.StringVar(&f.config, "config", "", "YAML config file (env RINGJOB_CONFIG)")
	fs.StringVar(&f.databaseURL, "database-url", "", "sqlite://PATH, mysql://USER:PASS@HOST:PORT/DB or postgres://USER:PASS@HOST:PORT/DB (env RINGJOB_DATABASE_URL)")
	fs.StringVar(&f.logLevel, "log-level", "", "debug, info, warn, error (env RINGJOB_LOG_LEVEL)")
	fs.StringVar(&f.logFormat, "log-format", "", "text or json (env RINGJOB_LOG_FORMAT)")
}

func (f *flagValues) apply(c *Config) {
	if f.databaseURL != "" {
		c.DatabaseURL = f.databaseURL
	}
	if f.listen != "" {
		c.Listen = f.listen
	}
	if f.logLevel != "" {
		c.Log.Level = f.logLevel
	}
	if f.logFormat != "" {
		c.Log.Format = f.logFormat
	}
}
