package imagebuild_test

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/ringjob/ringjob/internal/imagebuild"
)

// The Dockerfile must give the image Build gives: the same user, working
// directory, environment, port, entrypoint, command, build tags and files.
func TestDockerfileMatchesTheImage(t *testing.T) {
	b, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	df := string(b)
	want := []string{
		"USER " + strings.Join([]string{itoa(imagebuild.UID), itoa(imagebuild.UID)}, ":"),
		"WORKDIR " + imagebuild.HomeDir,
		"EXPOSE " + imagebuild.Port,
		"STOPSIGNAL SIGTERM",
		`ENTRYPOINT ["` + strings.Join(imagebuild.Entrypoint, `", "`) + `"]`,
		`CMD ["` + strings.Join(imagebuild.Cmd, `", "`) + `"]`,
		"ENV " + strings.Join(imagebuild.Env, " "),
		"-tags " + imagebuild.BuildTags,
		"CGO_ENABLED=0",
		"COPY --from=build /out/ringjob " + imagebuild.BinaryPath,
		imagebuild.CAPath + " " + imagebuild.CAPath,
		"FROM scratch",
	}
	for _, w := range want {
		if !strings.Contains(df, w) {
			t.Errorf("Dockerfile lacks %q", w)
		}
	}
	if n := len(regexp.MustCompile(`(?m)^FROM `).FindAllString(df, -1)); n != 2 {
		t.Errorf("Dockerfile has %d stages, want build + scratch", n)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
