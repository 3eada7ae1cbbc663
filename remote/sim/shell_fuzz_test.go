package sim

import (
	"context"
	"testing"
	"time"

	"github.com/profdeck/profdeck/remote"
)

// FuzzShell: any command line is parsed and run by the simulated shell
// without a panic, and ends by the context.
func FuzzShell(f *testing.F) {
	for _, s := range []string{
		"nvidia-smi --query-gpu=index,name,memory.used --format=csv,noheader,nounits",
		"nvidia-smi -i 0,9 --query-gpu=memory.used --format=csv -lms 5",
		`nohup setsid sh -c 'vllm serve m --profiler-config '"'"'{"profiler":"torch"}'"'"'' > '/var/log/a b.log' 2>&1 < /dev/null & echo $!`,
		"kill -TERM -- -2002; kill -0 2002 || echo gone",
		"mkdir -p /x && cat > /x/y && tail -c +3 /x/y | grep -c a",
		`echo "a \"b\" $(c)" 'd''e' f\ g >> /tmp/o`,
		"docker rm -f vllm; docker ps",
		"date +%Y-%m-%dT%H:%M:%S%z %",
		"sleep 0.001 && true || false ; :",
		"'unterminated \"",
		"|| && ; | > >> 2>&1 <",
	} {
		f.Add(s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	d, err := Start(ctx, Options{LoadTime: 200 * time.Millisecond})
	if err != nil {
		f.Fatal(err)
	}
	defer d.Close()
	f.Fuzz(func(t *testing.T, cmd string) {
		_ = Words(cmd)
		_, _ = splitList(cmd)
		_ = splitPipe(cmd)
		_ = launchLog(cmd)
		_ = isLaunch(cmd)
		_, _ = parseSMIArgs(Words(cmd))
		rctx, rcancel := context.WithTimeout(ctx, 20*time.Millisecond)
		defer rcancel()
		_ = d.Run(rctx, cmd, nil, func(remote.Line) {})
	})
}
