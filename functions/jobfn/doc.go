// Package jobfn is the small SDK for writing Ringjob jobs as AWS Lambda
// functions. It is a thin layer over aws-lambda-go: it decodes the trigger
// Ringjob sends (Trigger: job and run ids, handler, params, shard index and
// total, fire time, attempt), hands the handler a Logger whose lines go to
// stdout and are also collected, and returns or calls back the outcome.
//
//	func main() {
//		jobfn.Start(func(ctx context.Context, t jobfn.Trigger, log *jobfn.Logger) (any, error) {
//			log.Printf("shard %d of %d", t.ShardIndex, t.ShardTotal)
//			return map[string]int{"done": 1}, nil
//		})
//	}
//
// Two modes, chosen by Ringjob per target (see docs/lambda.md):
//
//   - Synchronous (RequestResponse): the function returns
//     {"ok":true,"result":...,"log":[...]}; a returned error is the
//     invocation's function error. Ringjob reads the result and the log tail
//     from the Invoke response.
//   - Event (asynchronous): the trigger carries callback_url and
//     callback_token. When the handler returns, jobfn POSTs an XXL-JOB
//     callback {"callbackList":[{"logId","logDateTim","logDateTime","handleCode","handleMsg","log"}]}
//     with the header X-Ringjob-Run-Token, retrying with backoff, and returns
//     success to Lambda so that Lambda never retries the job by itself.
//
// Build a function for the provided.al2023 runtime as a static binary named
// bootstrap (GOOS=linux, CGO_ENABLED=0, -tags lambda.norpc); `make functions`
// does this for functions/examples.
package jobfn
