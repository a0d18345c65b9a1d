package lambdaemu

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"time"

	"github.com/sirupsen/logrus"
)

// Function is one emulated Lambda function: an executable that speaks the
// Lambda Runtime API (a provided.al2023 "bootstrap", such as a Go program
// built with aws-lambda-go).
type Function struct {
	// Name is the function name (1-64 letters, digits, '-' and '_').
	Name string
	// Path is the executable, run as the function's bootstrap.
	Path string
	// Timeout is the function's timeout (default DefaultTimeout, AWS's default).
	// An invocation still running when it passes fails with "Task timed out"
	// and its process is killed.
	Timeout time.Duration
	// MemorySize is reported to the function (AWS_LAMBDA_FUNCTION_MEMORY_SIZE)
	// and in GetFunction; it limits nothing. Default 128.
	MemorySize int
	// MaxConcurrency is how many invocations may run at once, one process
	// each (the function's reserved concurrency). Default 10.
	MaxConcurrency int
	// QueueSize is how many synchronous invocations may wait for a free
	// process when all MaxConcurrency are busy. 0 (the default) throttles at
	// once, as AWS does. Past it, Invoke answers 429 TooManyRequestsException.
	QueueSize int
	// EventQueueSize bounds the Event (asynchronous) invocations accepted but
	// not yet started; past it, Invoke answers 429. Default 100.
	EventQueueSize int
	// Aliases are qualifiers accepted besides $LATEST (all run the same
	// code). Any other qualifier is ResourceNotFoundException.
	Aliases []string
	// Env is extra environment for the function's processes. It overrides
	// the AWS_* variables the emulator sets.
	Env map[string]string
}

// Options configure an Emulator. Zero values take the defaults below.
type Options struct {
	// Functions are the functions served.
	Functions []Function
	// Region is reported in ARNs and to the functions (AWS_REGION). Default
	// us-east-1.
	Region string
	// Addr is the Invoke API listen address. Default 127.0.0.1:0 (a free port;
	// see URL).
	Addr string
	// InitTimeout bounds a new process's init phase: from its start to its
	// first GET /runtime/invocation/next. Default 10s, as AWS.
	InitTimeout time.Duration
	// Log receives the emulator's own log and, at debug level, each
	// invocation's log. Nil discards.
	Log *logrus.Entry
	// OnInvoke, when set, is called after every invocation (synchronous or
	// Event) has ended, from the goroutine that ran it. It must not block for
	// long. Tests use it to see Event invocations finish.
	OnInvoke func(Record)
}

// Defaults of Function and Options.
const (
	DefaultTimeout        = 3 * time.Second
	DefaultMemorySize     = 128
	DefaultMaxConcurrency = 10
	DefaultEventQueueSize = 100
	DefaultRegion         = "us-east-1"
	DefaultAddr           = "127.0.0.1:0"
	DefaultInitTimeout    = 10 * time.Second
)

// AccountID is the account every emulated ARN names.
const AccountID = "000000000000"

var (
	nameRE   = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	aliasRE  = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)
	regionRE = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-\d+$`)
)

// withDefaults returns a copy of o with defaults filled in and the functions
// deep-copied; it is the one place defaults are set.
func (o Options) withDefaults() Options {
	if o.Region == "" {
		o.Region = DefaultRegion
	}
	if o.Addr == "" {
		o.Addr = DefaultAddr
	}
	if o.InitTimeout == 0 {
		o.InitTimeout = DefaultInitTimeout
	}
	fns := make([]Function, len(o.Functions))
	for i, f := range o.Functions {
		if f.Timeout == 0 {
			f.Timeout = DefaultTimeout
		}
		if f.MemorySize == 0 {
			f.MemorySize = DefaultMemorySize
		}
		if f.MaxConcurrency == 0 {
			f.MaxConcurrency = DefaultMaxConcurrency
		}
		if f.EventQueueSize == 0 {
			f.EventQueueSize = DefaultEventQueueSize
		}
		f.Aliases = append([]string(nil), f.Aliases...)
		env := make(map[string]string, len(f.Env))
		for k, v := range f.Env {
			env[k] = v
		}
		f.Env = env
		fns[i] = f
	}
	o.Functions = fns
	return o
}

// Validate checks the options; every message names the field at fault.
// Zero values are valid where a default exists.
func (o Options) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("lambdaemu: %s: %s", field, fmt.Sprintf(format, args...)))
	}
	if o.Region != "" && !regionRE.MatchString(o.Region) {
		bad("Region", "%q is not an AWS region name such as us-east-1", o.Region)
	}
	if o.InitTimeout < 0 {
		bad("InitTimeout", "must not be negative (got %s)", o.InitTimeout)
	}
	seen := map[string]int{}
	for i, f := range o.Functions {
		field := fmt.Sprintf("Functions[%d]", i)
		if !nameRE.MatchString(f.Name) {
			bad(field+".Name", "%q: use 1-64 letters, digits, '-' and '_'", f.Name)
		} else if j, dup := seen[f.Name]; dup {
			bad(field+".Name", "%q is already declared by Functions[%d]", f.Name, j)
		} else {
			seen[f.Name] = i
		}
		if f.Path == "" {
			bad(field+".Path", "is empty; give the function's executable (its bootstrap)")
		} else if st, err := os.Stat(f.Path); err != nil {
			bad(field+".Path", "%v", err)
		} else if st.IsDir() || st.Mode()&0o111 == 0 {
			bad(field+".Path", "%q is not an executable file", f.Path)
		}
		if f.Timeout < 0 {
			bad(field+".Timeout", "must not be negative (got %s)", f.Timeout)
		}
		if f.MemorySize < 0 {
			bad(field+".MemorySize", "must not be negative (got %d)", f.MemorySize)
		}
		if f.MaxConcurrency < 0 {
			bad(field+".MaxConcurrency", "must not be negative (got %d; 0 means %d)", f.MaxConcurrency, DefaultMaxConcurrency)
		}
		if f.QueueSize < 0 {
			bad(field+".QueueSize", "must not be negative (got %d)", f.QueueSize)
		}
		if f.EventQueueSize < 0 {
			bad(field+".EventQueueSize", "must not be negative (got %d; 0 means %d)", f.EventQueueSize, DefaultEventQueueSize)
		}
		for j, a := range f.Aliases {
			if !aliasRE.MatchString(a) || a == latest {
				bad(fmt.Sprintf("%s.Aliases[%d]", field, j), "%q is not a valid alias name", a)
			}
		}
	}
	return errors.Join(errs...)
}
