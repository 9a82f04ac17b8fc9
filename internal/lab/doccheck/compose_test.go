package doccheck_test

// There is no Docker engine where these tests run, so docker-compose.yml is
// checked the next best way: loaded with compose-spec's Go loader (the code
// docker compose itself uses to read the file) and cross-checked against what
// orderpaid and orderpaid-lab actually read, serve and take as subcommands.

import (
	"cmp"
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"

	"github.com/orderpaid/orderpaid/internal/app"
	"github.com/orderpaid/orderpaid/internal/platform/config"
)

// The two images the compose file builds from the Dockerfile: orderpaid, the
// production image (the default target), and orderpaid-lab (the target lab).
const (
	orderpaidImage = "orderpaid:dev"
	labImage       = "orderpaid-lab:dev"
	labTarget      = "lab"
)

// isOrderpaid says whether image is one of the two.
func isOrderpaid(image string) bool { return image == orderpaidImage || image == labImage }

// productionSubcommands are orderpaid's: app.Production, what cmd/orderpaid
// runs.
func productionSubcommands() []string {
	var names []string
	for name := range app.Production(nil) {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// labSubcommands are orderpaid-lab's: orderpaid's and the lab's own, which
// are the string keys of the map in commands() of cmd/orderpaid-lab/main.go
// (package main, which a test cannot import: the file is read instead).
func labSubcommands(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join("..", "..", "..", "cmd", "orderpaid-lab", "main.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var own []string
	ast.Inspect(f, func(n ast.Node) bool {
		fn, ok := n.(*ast.FuncDecl)
		if !ok || fn.Name.Name != "commands" {
			return true
		}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			if kv, ok := n.(*ast.KeyValueExpr); ok {
				if lit, ok := kv.Key.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					name, _ := strconv.Unquote(lit.Value)
					own = append(own, name)
				}
				return false
			}
			return true
		})
		return false
	})
	// The lab's own are at least its workshop's: a parse that finds fewer has
	// lost its way in the file.
	for _, want := range []string{"fakes", "all", "scenario"} {
		if !slices.Contains(own, want) {
			t.Fatalf("commands() in cmd/orderpaid-lab/main.go: found the lab's own subcommands %v, without %q: is the file read right?", own, want)
		}
	}
	names := append(productionSubcommands(), own...)
	sort.Strings(names)
	return slices.Compact(names)
}

// serving are the subcommands that run until they are stopped; every other
// one does its job and exits (oneShot).
var serving = map[string]bool{"api": true, "worker": true, "fakes": true, "all": true}

func oneShot(cmd string) bool { return !serving[cmd] }

// labLevers are the flags only orderpaid-lab's api, worker and reconcile
// define: orderpaid has none of them.
var labLevers = []string{"without", "faults", "crash-at", "boundaries", "lease", "dedupe-executions"}

// leverIn returns the first lab lever among args, "" when none.
func leverIn(args []string) string {
	for _, a := range args {
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") && slices.Contains(labLevers, name) {
			return a
		}
	}
	return ""
}

// infraPorts are the ports the third-party images listen on, by image name.
var infraPorts = map[string][]string{
	"postgres":             {"5432"},
	"rabbitmq":             {"5672"},
	"nats":                 {"4222"},
	"apache/kafka":         {"9092"},
	"jaegertracing/jaeger": {"4317", "4318"},
}

// loadCompose loads docker-compose.yml at the repository root as `docker compose --profile
// profiles... up` would with env as the shell's environment.
func loadCompose(t *testing.T, env map[string]string, profiles ...string) *types.Project {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	details := types.ConfigDetails{
		WorkingDir:  dir,
		ConfigFiles: []types.ConfigFile{{Filename: filepath.Join(dir, "docker-compose.yml")}},
		Environment: types.Mapping(env),
	}
	p, err := loader.LoadWithContext(context.Background(), details, loader.WithProfiles(profiles))
	if err != nil {
		t.Fatalf("load docker-compose.yml (profiles %v): %v", profiles, err)
	}
	return p
}

// loadAll loads every service, whatever its profile.
func loadAll(t *testing.T) *types.Project { return loadCompose(t, nil, "*") }

// orderpaidServices returns the services running either image, orderpaid's or
// orderpaid-lab's, by name.
func orderpaidServices(p *types.Project) []types.ServiceConfig {
	var out []types.ServiceConfig
	for _, s := range p.Services {
		if isOrderpaid(s.Image) {
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func subcommand(s types.ServiceConfig) string {
	if len(s.Command) == 0 {
		return ""
	}
	return s.Command[0]
}

// getenv reads the service's environment as the process in it would.
func getenv(s types.ServiceConfig) func(string) string {
	return func(k string) string {
		if v := s.Environment[k]; v != nil {
			return *v
		}
		return ""
	}
}

// serviceConfig is what orderpaid would load inside the service.
func serviceConfig(t *testing.T, s types.ServiceConfig) config.Config {
	t.Helper()
	cfg, err := config.Load(getenv(s))
	if err != nil {
		t.Fatalf("service %s: config.Load: %v", s.Name, err)
	}
	return cfg
}

// listenPorts are the ports an orderpaid service serves HTTP on.
func listenPorts(t *testing.T, s types.ServiceConfig) []string {
	t.Helper()
	cfg := serviceConfig(t, s)
	var addrs []string
	switch subcommand(s) {
	case "api":
		addrs = []string{cfg.HTTPAddr}
	case "fakes":
		addrs = []string{cfg.FakesAddr}
	case "all":
		addrs = []string{cfg.HTTPAddr, cfg.FakesAddr}
	}
	var ports []string
	for _, a := range addrs {
		_, port, err := net.SplitHostPort(a)
		if err != nil {
			t.Fatalf("service %s: listen address %q: %v", s.Name, a, err)
		}
		ports = append(ports, port)
	}
	return ports
}

func imageName(image string) string {
	name, _, _ := strings.Cut(image, ":")
	return name
}

func TestComposeStarts(t *testing.T) {
	base := []string{"api", "fakes", "jaeger", "migrate", "postgres", "worker"}
	for _, tc := range []struct {
		name     string
		env      map[string]string
		profiles []string
		extra    []string
		broker   string
	}{
		{"docker compose up", nil, nil, nil, config.BrokerPostgres},
		{"BROKER=amqp docker compose --profile amqp up", map[string]string{"BROKER": "amqp"}, []string{"amqp"}, []string{"rabbitmq"}, config.BrokerAMQP},
		{"BROKER=nats docker compose --profile nats up", map[string]string{"BROKER": "nats"}, []string{"nats"}, []string{"nats"}, config.BrokerNATS},
		{"BROKER=kafka docker compose --profile kafka up", map[string]string{"BROKER": "kafka"}, []string{"kafka"}, []string{"kafka"}, config.BrokerKafka},
		{"docker compose --profile demo up", nil, []string{"demo"}, []string{"scenarios"}, config.BrokerPostgres},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := loadCompose(t, tc.env, tc.profiles...)
			want := append(slices.Clone(base), tc.extra...)
			sort.Strings(want)
			if got := p.ServiceNames(); !slices.Equal(got, want) {
				t.Errorf("services = %v, want %v", got, want)
			}
			for _, s := range orderpaidServices(p) {
				if s.Environment["BROKER"] == nil {
					continue
				}
				if cfg := serviceConfig(t, s); cfg.Broker != tc.broker {
					t.Errorf("service %s: BROKER = %q, want %q", s.Name, cfg.Broker, tc.broker)
				}
			}
		})
	}
}

// Each image is built from one Dockerfile target: orderpaid:dev from the
// default (the last stage, production's), orderpaid-lab:dev from lab, and
// every service that names an image builds it the same way.
func TestComposeOrderpaidServicesShareOneImage(t *testing.T) {
	p := loadAll(t)
	wantTarget := map[string]string{orderpaidImage: "", labImage: labTarget}
	for _, s := range p.Services {
		if s.Build == nil {
			continue
		}
		want, ok := wantTarget[s.Image]
		if !ok {
			t.Errorf("service %s builds the Dockerfile into %q, want %q or %q (two images, each built once)", s.Name, s.Image, orderpaidImage, labImage)
			continue
		}
		if s.Build.Target != want {
			t.Errorf("service %s builds %s from target %q, want %q", s.Name, s.Image, s.Build.Target, want)
		}
		if s.Build.Dockerfile != "" && s.Build.Dockerfile != "Dockerfile" {
			t.Errorf("service %s builds from %q, want the Dockerfile", s.Name, s.Build.Dockerfile)
		}
	}
	for _, s := range orderpaidServices(p) {
		if s.Build == nil {
			t.Errorf("service %s runs %s but has no build section: docker compose up would try to pull it", s.Name, s.Image)
		}
	}
}

// The lab target the compose file builds is a stage of the Dockerfile, and
// its binary is orderpaid-lab.
func TestComposeLabTargetIsADockerfileStage(t *testing.T) {
	for _, st := range readDockerfile(t) {
		if st.name == labTarget {
			if eps := st.args("ENTRYPOINT"); len(eps) == 0 || eps[len(eps)-1] != `["orderpaid-lab"]` {
				t.Errorf("Dockerfile stage %s: ENTRYPOINT %v, want [\"orderpaid-lab\"]", labTarget, eps)
			}
			return
		}
	}
	t.Errorf("docker-compose.yml builds %s from target %q, which the Dockerfile has no stage for", labImage, labTarget)
}

func TestComposeEnvironmentIsWhatConfigReads(t *testing.T) {
	names := map[string]string{} // OTEL_SERVICE_NAME -> service
	for _, s := range orderpaidServices(loadAll(t)) {
		t.Run(s.Name, func(t *testing.T) {
			for k := range s.Environment {
				if !slices.Contains(config.Variables, k) && !strings.HasPrefix(k, "OTEL_") {
					t.Errorf("sets %s, which orderpaid does not read (config.Variables or OTEL_*)", k)
				}
			}
			serviceConfig(t, s) // every value validates
			if v := getenv(s)("WEBHOOK_SECRET"); v != "" && v != config.DevWebhookSecret {
				t.Errorf("WEBHOOK_SECRET = %q, want the documented dev value config.DevWebhookSecret", v)
			}
			if slices.Contains(s.Command, "api") {
				// The api refuses the dev secret outside a dev run.
				if _, _, err := serviceConfig(t, s).WebhookSecretFor(false); err != nil {
					t.Errorf("the api would refuse to start: %v", err)
				}
			}
			name := getenv(s)("OTEL_SERVICE_NAME")
			if other, dup := names[name]; name == "" || dup {
				t.Errorf("OTEL_SERVICE_NAME = %q (also used by %q): want one name per service to tell them apart in Jaeger", name, other)
			}
			names[name] = s.Name
		})
	}
}

func TestComposeEveryBrokerValidates(t *testing.T) {
	for _, broker := range []string{config.BrokerPostgres, config.BrokerAMQP, config.BrokerNATS, config.BrokerKafka} {
		p := loadCompose(t, map[string]string{"BROKER": broker}, "*")
		for _, s := range orderpaidServices(p) {
			if cfg, err := config.Load(getenv(s)); err != nil {
				t.Errorf("BROKER=%s, service %s: %v", broker, s.Name, err)
			} else if s.Environment["BROKER"] != nil && cfg.Broker != broker {
				t.Errorf("BROKER=%s, service %s: got broker %q", broker, s.Name, cfg.Broker)
			}
		}
	}
}

// Each service's command is a subcommand of its image's binary: orderpaid's
// for the production image, which takes no lab lever; orderpaid-lab's for the
// lab image, which a service runs only for what orderpaid lacks (a lab
// subcommand, or a lever).
func TestComposeCommandsAreSubcommands(t *testing.T) {
	production, lab := productionSubcommands(), labSubcommands(t)
	for _, s := range orderpaidServices(loadAll(t)) {
		cmd := subcommand(s)
		switch s.Image {
		case orderpaidImage:
			if !slices.Contains(production, cmd) {
				where := ""
				if slices.Contains(lab, cmd) {
					where = ": it is orderpaid-lab's, run it on " + labImage
				}
				t.Errorf("service %s: command %v: %q is not an orderpaid subcommand %v%s", s.Name, s.Command, cmd, production, where)
			}
			if l := leverIn(s.Command); l != "" {
				t.Errorf("service %s: command %v passes the lab lever %s, which orderpaid does not define: run it on %s", s.Name, s.Command, l, labImage)
			}
		case labImage:
			if !slices.Contains(lab, cmd) {
				t.Errorf("service %s: command %v: %q is not an orderpaid-lab subcommand %v", s.Name, s.Command, cmd, lab)
			}
			if slices.Contains(production, cmd) && leverIn(s.Command) == "" {
				t.Errorf("service %s: command %v runs the lab image for a production subcommand without a lab lever: run it on %s, which carries no lab", s.Name, s.Command, orderpaidImage)
			}
		}
		if len(s.Entrypoint) > 0 {
			t.Errorf("service %s overrides the image's ENTRYPOINT (%v): the command would not reach the binary", s.Name, s.Entrypoint)
		}
		if oneShot(cmd) && s.Restart != "" && s.Restart != types.RestartPolicyNo {
			t.Errorf("service %s runs the one-shot %q with restart %q: it would run again after it succeeds", s.Name, cmd, s.Restart)
		}
		if !oneShot(cmd) {
			cfg := serviceConfig(t, s)
			if s.StopGracePeriod == nil || *s.StopGracePeriod <= types.Duration(cfg.ShutdownTimeout) {
				t.Errorf("service %s: stop_grace_period %v is not longer than SHUTDOWN_TIMEOUT %v: Docker would SIGKILL a graceful shutdown", s.Name, s.StopGracePeriod, cfg.ShutdownTimeout)
			}
		}
	}
}

func TestComposePortsMatchListenAddresses(t *testing.T) {
	for _, s := range orderpaidServices(loadAll(t)) {
		listen := listenPorts(t, s)
		published := map[string]bool{}
		for _, port := range s.Ports {
			target := strconv.Itoa(int(port.Target))
			if !slices.Contains(listen, target) {
				t.Errorf("service %s publishes container port %s but listens on %v", s.Name, target, listen)
			}
			if port.Published != "" && port.Published != target {
				t.Errorf("service %s publishes %s on host port %s: keep them equal so the documented localhost:%s works", s.Name, target, port.Published, target)
			}
			published[target] = true
		}
		for _, l := range listen {
			if !published[l] {
				t.Errorf("service %s listens on %s but does not publish it", s.Name, l)
			}
		}
		if s.GetScale() > 1 && len(s.Ports) > 0 {
			t.Errorf("service %s has %d replicas and published ports: the replicas would fight for the host port", s.Name, s.GetScale())
		}
	}
}

func TestComposeHealthchecksHitTheService(t *testing.T) {
	wantPath := map[string]string{"api": "/readyz", "fakes": "/healthz"}
	for _, s := range orderpaidServices(loadAll(t)) {
		want, serves := wantPath[subcommand(s)]
		if !serves {
			continue
		}
		if s.HealthCheck == nil || s.HealthCheck.Disable {
			t.Errorf("service %s serves HTTP but has no healthcheck", s.Name)
			continue
		}
		i := slices.IndexFunc(s.HealthCheck.Test, func(a string) bool { return strings.HasPrefix(a, "http://") })
		if i < 0 {
			t.Errorf("service %s: healthcheck %v calls no URL", s.Name, s.HealthCheck.Test)
			continue
		}
		u, err := url.Parse(s.HealthCheck.Test[i])
		if err != nil || u.Path != want || !slices.Contains(listenPorts(t, s), u.Port()) {
			t.Errorf("service %s: healthcheck URL %q, want %s on one of its ports %v", s.Name, s.HealthCheck.Test[i], want, listenPorts(t, s))
		}
	}
}

func TestComposeDependsOnConditions(t *testing.T) {
	p := loadAll(t)
	for _, s := range p.Services {
		for name, dep := range s.DependsOn {
			target, ok := p.Services[name]
			if !ok {
				t.Errorf("service %s depends on %q, which does not exist", s.Name, name)
				continue
			}
			switch dep.Condition {
			case types.ServiceConditionHealthy:
				if target.HealthCheck == nil || target.HealthCheck.Disable || len(target.HealthCheck.Test) == 0 {
					t.Errorf("service %s waits for %s to be healthy, but %s has no healthcheck: it would never start", s.Name, name, name)
				}
			case types.ServiceConditionCompletedSuccessfully:
				if !isOrderpaid(target.Image) || !oneShot(subcommand(target)) {
					t.Errorf("service %s waits for %s to complete, but %s is not a one-shot (%v): it would never start", s.Name, name, name, target.Command)
				}
			}
		}
	}
	for _, s := range orderpaidServices(p) {
		if cmd := subcommand(s); cmd == "migrate" || cmd == "fakes" {
			continue // migrate makes the schema; the fakes use no database
		}
		waits := false
		for name, dep := range s.DependsOn {
			waits = waits || (subcommand(p.Services[name]) == "migrate" && dep.Condition == types.ServiceConditionCompletedSuccessfully)
		}
		if !waits {
			t.Errorf("service %s uses the database but does not wait for migrate to complete successfully", s.Name)
		}
	}
}

func TestComposeURLsNameServices(t *testing.T) {
	p := loadAll(t)
	// serves says which subcommand must answer a URL variable, when it points
	// at an orderpaid service.
	serves := map[string][]string{"FAKES_URL": {"fakes", "all"}, "WEBHOOK_URL": {"api", "all"}}
	for _, s := range orderpaidServices(p) {
		for _, name := range []string{"DATABASE_URL", "AMQP_URL", "NATS_URL", "FAKES_URL", "WEBHOOK_URL", "OTEL_EXPORTER_OTLP_ENDPOINT"} {
			v := getenv(s)(name)
			if v == "" {
				continue
			}
			u, err := url.Parse(v)
			if err != nil {
				t.Errorf("service %s: %s=%q: %v", s.Name, name, v, err)
				continue
			}
			target, ok := p.Services[u.Hostname()]
			if !ok {
				t.Errorf("service %s: %s=%q: no service named %q", s.Name, name, v, u.Hostname())
				continue
			}
			ports := infraPorts[imageName(target.Image)]
			if isOrderpaid(target.Image) {
				ports = listenPorts(t, target)
				if want := serves[name]; !slices.Contains(want, subcommand(target)) {
					t.Errorf("service %s: %s=%q: %s runs %q, want one of %v", s.Name, name, v, u.Hostname(), subcommand(target), want)
				}
			}
			if !slices.Contains(ports, u.Port()) {
				t.Errorf("service %s: %s=%q: %s listens on %v, not %q", s.Name, name, v, u.Hostname(), ports, u.Port())
			}
			if name == "WEBHOOK_URL" && u.Path != "/webhooks/payments" {
				t.Errorf("service %s: WEBHOOK_URL path %q, want /webhooks/payments", s.Name, u.Path)
			}
			checkCredentials(t, s.Name+": "+name, u, target)
		}
		// KAFKA_BROKERS is a list of host:port, not a URL.
		for _, hostPort := range strings.Split(getenv(s)("KAFKA_BROKERS"), ",") {
			if hostPort == "" {
				continue
			}
			host, port, err := net.SplitHostPort(hostPort)
			if err != nil {
				t.Errorf("service %s: KAFKA_BROKERS entry %q: %v", s.Name, hostPort, err)
				continue
			}
			target, ok := p.Services[host]
			if !ok {
				t.Errorf("service %s: KAFKA_BROKERS entry %q: no service named %q", s.Name, hostPort, host)
			} else if ports := infraPorts[imageName(target.Image)]; !slices.Contains(ports, port) {
				t.Errorf("service %s: KAFKA_BROKERS entry %q: %s listens on %v, not %q", s.Name, hostPort, host, ports, port)
			}
		}
	}
}

// checkCredentials checks that the user and password in u are the ones the
// infrastructure service it names is started with, and marked dev-only.
func checkCredentials(t *testing.T, what string, u *url.URL, target types.ServiceConfig) {
	t.Helper()
	env := getenv(target)
	var user, pass string
	switch imageName(target.Image) {
	case "postgres":
		user, pass = cmp.Or(env("POSTGRES_USER"), "postgres"), env("POSTGRES_PASSWORD")
	case "rabbitmq":
		user, pass = cmp.Or(env("RABBITMQ_DEFAULT_USER"), "guest"), cmp.Or(env("RABBITMQ_DEFAULT_PASS"), "guest")
	default:
		return
	}
	gotPass, _ := u.User.Password()
	if u.User.Username() != user || gotPass != pass {
		t.Errorf("%s: credentials %q do not match the %s service's (user %q)", what, u.User, target.Name, user)
	}
	if !strings.Contains(pass, "dev_only") {
		t.Errorf("%s: password of %s is not a documented dev-only value (want it to say dev_only)", what, target.Name)
	}
}

// TestComposeSubcommandListIsCurrent holds this file's view of the two
// binaries to their source: every subcommand is known as serving or one-shot
// (a new one must be placed), the lab's own are none of orderpaid's, and
// orderpaid has none of the lab's.
func TestComposeSubcommandListIsCurrent(t *testing.T) {
	production, lab := productionSubcommands(), labSubcommands(t)
	if len(production) < 8 {
		t.Fatalf("app.Production(nil) has %d subcommands %v: want the service's and its operator's tools", len(production), production)
	}
	for _, name := range production {
		if !slices.Contains(lab, name) {
			t.Errorf("orderpaid has %q, orderpaid-lab does not: the lab is orderpaid and more", name)
		}
	}
	for _, name := range []string{"fakes", "all", "demo", "scenario", "bench", "soak", "crashmatrix"} {
		if slices.Contains(production, name) {
			t.Errorf("orderpaid has the lab's %q: production must not carry the lab", name)
		}
	}
	for name := range serving {
		if !slices.Contains(lab, name) {
			t.Errorf("this test's serving subcommand %q is neither binary's: update the list", name)
		}
	}
}
