// Package dbtest gives tests real databases: a fresh MySQL/MariaDB database
// per test, or a path for a fresh SQLite file.
//
// MySQL finds a server once per test process, in this order:
//
//  1. RINGJOB_MYSQL_DSN, when set: a go-sql-driver/mysql DSN to a server whose
//     user may CREATE and DROP databases. Its database name, if any, is only
//     used to connect; every test gets its own database. If it is set and the
//     server does not answer, tests fail rather than look elsewhere.
//  2. root@tcp(127.0.0.1:3306)/ with no password, if it answers within 2 s.
//  3. A throwaway mariadbd that dbtest starts itself in a directory
//     ringjob-dbtest-mariadb-<pid>-* under os.TempDir(), on a free port,
//     shared by every test of the process. On Linux it is killed with the
//     test process even if that process is killed; a later run removes
//     directories whose test process is gone.
//
// RINGJOB_DBTEST_FORCE_THROWAWAY=1 skips steps 1 and 2, to check step 3.
// When no server can be had, MySQL fails the test with a message that says
// how to get one.
//
// Packages that use MySQL call Main from TestMain, so that the throwaway
// server is stopped and its directory removed when the tests are done:
//
//	func TestMain(m *testing.M) { dbtest.Main(m) }
//
// Packages that check for leaked goroutines wrap m instead; everything
// dbtest started has ended by the time goleak looks:
//
//	func TestMain(m *testing.M) { goleak.VerifyTestMain(dbtest.Wrap(m)) }
//
// (goleak.VerifyNone inside a test would see dbtest's connection pool and
// server goroutines, which live for the whole process.)
//
// Each database is named ringjob_test_<test name>_<random hex>, created with
// utf8mb4, and dropped when the test ends. `go test ./...` runs packages as
// separate processes; with no server configured each would start its own
// throwaway, so CI starts one and sets RINGJOB_MYSQL_DSN (see .ci/run).
package dbtest
