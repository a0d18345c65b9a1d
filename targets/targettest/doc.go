// Package targettest holds what every target driver's tests share: the
// conformance suite (Run) and an in-memory Sink (MemorySink).
//
// A driver package runs the suite from one of its tests:
//
//	func TestConformance(t *testing.T) {
//		targettest.Run(t, targettest.Harness{
//			NewDriver: func(t *testing.T, sink targets.Sink) targets.Driver {
//				d, err := mydriver.New(cfg, sink, logEntry)
//				if err != nil {
//					t.Fatal(err)
//				}
//				t.Cleanup(func() { _ = d.Close(context.Background()) })
//				return d
//			},
//			Succeed: "local://ok", Fail: "local://fail", Long: "local://sleep",
//			Unknown: "local://nope",
//		})
//	}
//
// The suite builds a fresh MemorySink and driver for every check and runs the
// checks in parallel. It never sleeps for a fixed time: it waits on the sink's
// signals with deadlines. What it asserts, per check:
//
//   - success: the Succeed target reaches "succeeded", either through
//     Dispatch.Done or through exactly one Sink.Complete, never both;
//   - failure: the Fail target reaches "failed" with a message;
//   - kill: Kill of a running Long run ends it as "killed"; Kill repeated, Kill
//     after the end and Kill of an unknown run are not errors; IdleBeat reports
//     targets.ErrBusy for the job while it runs and nil once it has ended;
//   - timeout: a Long run with Request.Timeout ends as "timed_out";
//   - beat: Beat on the Succeed target is nil;
//   - log: once a run has ended, Log returns its lines from line 1 and from a
//     later line, and nothing past the last line;
//   - unknown target: Run and Beat on the Unknown target return an error that
//     wraps targets.ErrUnknownTarget;
//   - concurrent runs each get their own single outcome.
//
// A driver must have appended all of a run's output to the sink before it
// reports the run's outcome (or returns Done), and must have forgotten the run
// (IdleBeat is idle again) by then too.
package targettest
