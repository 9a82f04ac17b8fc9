package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/orderpaid/orderpaid/internal/lab/scenario"
	"github.com/orderpaid/orderpaid/internal/lab/switches"
	"github.com/orderpaid/orderpaid/internal/platform/config"
)

// passedToChildren are the variables a scenario's processes get from the
// runner's environment besides what the runner sets itself.
var passedToChildren = []string{
	"AMQP_URL", "NATS_URL", "KAFKA_BROKERS", "WEBHOOK_SECRET", "CONSUMER_BATCH_SIZE", "CONSUMER_POSITION",
	"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_TRACES_EXPORTER", "OTEL_SERVICE_NAME",
}

const scenarioUsage = `list | run (NAME | all) [flags]

  list               the scenarios, one line each, with the guards they demonstrate
  run NAME           run one scenario in a world of its own (database, ports, processes)
  run all            run every scenario and print the table; exit 0 only if each showed what it expected`

func runScenario(e env) error {
	verb := ""
	if len(e.Args) > 0 {
		verb = e.Args[0]
	}
	switch verb {
	case "list":
		return scenarioList(e)
	case "run":
		return scenarioRun(e)
	case "-h", "--help", "help":
		fmt.Fprintf(e.Stdout, "usage: orderpaid-lab scenario %s\n\n(orderpaid-lab scenario run -h for the flags)\n", scenarioUsage)
		return nil
	default:
		fmt.Fprintf(e.Stderr, "usage: orderpaid-lab scenario %s\n", scenarioUsage)
		return usageError{Err: fmt.Errorf("scenario: want list or run, got %q", verb)}
	}
}

func scenarioList(e env) error {
	if len(e.Args) > 1 {
		return usageError{Err: fmt.Errorf("scenario list: unexpected argument %q", e.Args[1])}
	}
	tw := tabwriter.NewWriter(e.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tGUARDS IT DEMONSTRATES (--without)\tWHAT HAPPENS")
	for _, s := range scenario.Catalogue() {
		guards := strings.Join(s.Guards(), ",")
		if guards == "" {
			guards = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Name, guards, s.Summary)
	}
	return tw.Flush()
}

func scenarioRun(e env) error {
	args := e.Args[1:]
	name := ""
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, args = args[0], args[1:]
	}
	fs := flag.NewFlagSet("scenario run", flag.ContinueOnError)
	without := fs.String("without", "", "switch one guard off and expect its damage: "+strings.Join(switches.Names(), ", ")+
		"; with all, runs the scenarios that demonstrate it")
	matrix := fs.Bool("matrix", false, "run each scenario protected and then with each of its guards off (what CI checks)")
	brokerName := fs.String("broker", "", "broker of the scenarios' processes: postgres, amqp, nats or kafka (default $BROKER, else postgres; kafka without KAFKA_BROKERS runs on an in-process cluster)")
	bin := fs.String("bin", "", "the orderpaid binary to start as child processes (default: this one)")
	keep := fs.Bool("keep", false, "keep every scenario's database and process logs (always kept for a failed one)")
	parallel := fs.Int("parallel", 1, "scenarios run at once (postgres broker only; each has its own database and ports)")
	audits := fs.Bool("audit", false, "after the table, print each order's GET /orders/{id}/audit as the API answered it once the scenario settled, one JSON line per order")
	if err := parseFlags(fs, env{Binary: e.Binary, Ctx: e.Ctx, Args: args, Getenv: e.Getenv, Stdout: e.Stdout, Stderr: e.Stderr}, "(NAME | all) [flags]"); err != nil {
		return helpOK(err)
	}
	if name == "" {
		fs.Usage()
		return usageError{Err: errors.New("scenario run: give a scenario NAME (see orderpaid-lab scenario list) or all")}
	}
	if *without != "" && !slices.Contains(switches.Names(), *without) {
		return usageError{Err: fmt.Errorf("scenario run: --without %q: want one of %s", *without, strings.Join(switches.Names(), ", "))}
	}
	if *matrix && *without != "" {
		return usageError{Err: errors.New("scenario run: --matrix already runs every guard off; drop --without")}
	}
	if *parallel < 1 || *parallel > 16 {
		return usageError{Err: fmt.Errorf("scenario run: --parallel %d: want 1 to 16", *parallel)}
	}
	cases, err := scenarioCases(name, *without, *matrix)
	if err != nil {
		return usageError{Err: err}
	}
	cfg, _, err := loadConfig(e)
	if err != nil {
		return err
	}
	runCfg, err := scenarioConfig(e, cfg, *brokerName, *bin, *keep, *parallel)
	if err != nil {
		return err
	}
	runCfg.Audits = *audits
	stopKafka, err := inProcessKafka(e, "scenario", "the scenarios", runCfg)
	if err != nil {
		return err
	}
	defer stopKafka()
	return writeResults(e, scenario.Run(e.Ctx, runCfg, cases))
}

// writeResults prints the scenarios' table, their audits (--audit) and the
// summary, and fails if any scenario did.
func writeResults(e env, results []scenario.Result) error {
	fmt.Fprintln(e.Stdout)
	if err := scenario.WriteTable(e.Stdout, results); err != nil {
		return err
	}
	if err := scenario.WriteAudits(e.Stdout, results); err != nil {
		return err
	}
	summary := scenario.Summary(results)
	fmt.Fprintln(e.Stdout, "\n"+summary)
	for _, r := range results {
		if !r.OK() {
			return fmt.Errorf("scenario: %s (logs and databases of the failed runs were kept; see the progress lines)", summary)
		}
	}
	return nil
}

// scenarioCases turns NAME|all, --without and --matrix into the runs to make.
func scenarioCases(name, without string, matrix bool) ([]scenario.Case, error) {
	var picked []*scenario.Scenario
	if name == "all" {
		picked = scenario.Catalogue()
		if without != "" {
			picked = scenario.Demonstrating(without)
		}
	} else {
		s, err := scenario.Find(name)
		if err != nil {
			return nil, err
		}
		if _, err := s.Expectation(without); err != nil {
			return nil, err
		}
		picked = []*scenario.Scenario{s}
	}
	if matrix {
		return scenario.Matrix(picked), nil
	}
	cases := make([]scenario.Case, len(picked))
	for i, s := range picked {
		cases[i] = scenario.Case{Scenario: s, Without: without}
	}
	return cases, nil
}

func scenarioConfig(e env, cfg config.Config, brokerName, bin string, keep bool, parallel int) (scenario.Config, error) {
	if brokerName == "" {
		brokerName = cfg.Broker
	}
	switch brokerName {
	case config.BrokerPostgres, config.BrokerAMQP, config.BrokerNATS, config.BrokerKafka:
	default:
		return scenario.Config{}, usageError{Err: fmt.Errorf("scenario run: --broker %q: want postgres, amqp, nats or kafka", brokerName)}
	}
	if bin == "" {
		self, err := os.Executable()
		if err != nil {
			return scenario.Config{}, fmt.Errorf("scenario run: find this binary (pass --bin PATH): %w", err)
		}
		bin = self
	}
	passed := map[string]string{}
	for _, k := range passedToChildren {
		if v := e.Getenv(k); v != "" {
			passed[k] = v
		}
	}
	return scenario.Config{
		Bin: bin, AdminURL: cfg.DatabaseURL, Broker: brokerName, BrokerPrefix: cfg.BrokerPrefix, Env: passed,
		Keep: keep, Parallel: parallel, Progress: e.Stderr,
	}, nil
}
