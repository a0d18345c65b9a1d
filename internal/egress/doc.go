// Package egress is the outbound policy: which addresses the server may
// connect to when it calls HTTP executors and alarm webhooks.
//
// A destination is a host name (or IP literal) and port. It is refused when
//   - its host matches a denied host pattern;
//   - an address it resolves to is in a denied CIDR: the configured ones
//     plus, unless DisableDefaultDenies, link-local and cloud metadata
//     addresses (169.254.0.0/16 with 169.254.169.254, fe80::/10,
//     fd00:ec2::254, 100.100.100.200), "this network" (0.0.0.0/8, ::),
//     multicast and broadcast;
//   - it is the server's own listener (its listen address and port, or every
//     local address with that port when it listens on all of them);
//   - allowed CIDRs or allowed host patterns are configured and it matches
//     none of them.
//
// Loopback (127.0.0.0/8, ::1) and private ranges are allowed by default:
// on one machine an executor on 127.0.0.1 is the normal case, and executors
// usually live on a private network. Deny them with denied_cidrs where the
// scheduler shares a host with things it must never call.
//
// The policy is checked twice: when an address is registered or saved
// (CheckURL, resolving the host), and again on every connection, on the IP
// the dialer actually connects to (Dialer's Control hook), so a DNS name
// that resolves to an allowed address at registration and to a metadata
// address later (DNS rebinding) is still refused. Clients built here never
// follow redirects and never use an HTTP proxy, since a proxy would connect
// on the server's behalf where the policy cannot see it.
package egress
