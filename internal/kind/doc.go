// Package kind declares, in one place, the closed sets of names Ringjob
// stores and exchanges: run states, trigger types, misfire policies, routing
// strategies, block strategies, alarm channel kinds, alarm events and alarm
// statuses.
//
// Each set is a named type with its constants, a Valid method and, where
// users type the name, a Parse function that accepts the aliases XXL-JOB uses
// and returns an error naming the valid values. The string values are what the
// database, the REST API and the config files hold, so they never change.
package kind
