package kind

// Protocol is how the executors of a group are called: the XXL-JOB
// protocol version they speak (a group setting).
type Protocol string

// Executor protocols. The names are the values the API stores and takes.
const (
	ProtocolClassic Protocol = ""    // XXL-JOB 2.x to 3.4 executors: /run
	Protocol35      Protocol = "3.5" // XXL-JOB 3.5 executors: /trigger, with the XXL-JOB-APPNAME header
)

// Protocols lists the executor protocols.
var Protocols = []Protocol{ProtocolClassic, Protocol35}

// Valid reports whether p is a known executor protocol.
func (p Protocol) Valid() bool { return p == ProtocolClassic || p == Protocol35 }

// Describe says which executors speak p, for help texts.
func (p Protocol) Describe() string {
	switch p {
	case ProtocolClassic:
		return "XXL-JOB 2.x to 3.4 executors and our executor SDK, the default"
	case Protocol35:
		return "XXL-JOB 3.5 executors"
	}
	return "unknown"
}
