package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"golang.org/x/term"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/mcpgate/mcpgate/gateway/config"
	"github.com/mcpgate/mcpgate/gateway/server"
)

func newServeCmd(out io.Writer, getenv func(string) string) *cobra.Command {
	var dev bool
	cmd := &cobra.Command{
		Use:   "serve [--dev]",
		Short: "run the gateway (configuration from the environment)",
		Long: `Run the gateway until SIGINT or SIGTERM, then drain open requests for up to
10 s and exit 0. Configuration comes from the environment variables below
(docs/configuration.md says more of each); a bad value stops the
gateway before it starts, naming the variable. At start it logs what runs: the
store, the surfaces and their addresses, whether the admin API is on, the
policy revision and the edition. Started inside another program's
foreground process group on a terminal (make run), it takes the terminal's
foreground for itself, so a Ctrl-C reaches the gateway alone and make exits
with its status 0.

--dev fills what the environment leaves unset for a local trial: the embedded
store sqlite:mcpgate-dev.db, generated keys kept in ` + devSecretsFile + ` (both in
the current folder), console logs; it creates or refreshes a demo workspace
and prints ready agent tokens with a copy-paste example.`,
		Example: `  mcpgate serve --dev
  MCPGATE_JWT_SECRET=$(openssl rand -hex 32) MCPGATE_DATABASE_URL=postgres://… mcpgate serve`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return serve(c.Context(), dev, out, getenv)
		},
	}
	cmd.Flags().BoolVar(&dev, "dev", false, "development mode: embedded store, demo workspace, generated keys, console logs")
	cmd.Annotations = map[string]string{envAnnotation: configHelp(config.Vars)}
	return cmd
}

// configHelp formats the configuration table (config.Vars, which its
// tests hold to what config.Load reads) for serve's help: each variable
// with its default, its meaning on the line below.
func configHelp(vars []config.Var) string {
	var b strings.Builder
	for _, v := range vars {
		b.WriteString("  " + v.Name)
		if v.Default != "" {
			b.WriteString(" (default " + v.Default + ")")
		}
		b.WriteString("\n      " + v.Meaning + "\n")
	}
	return b.String()
}

func serve(ctx context.Context, dev bool, out io.Writer, getenv func(string) string) error {
	var devEnv *devDefaults
	if dev {
		devEnv = newDevDefaults(getenv)
		getenv = devEnv.getenv
	}
	cfg, err := config.Load(getenv)
	if err != nil {
		return err
	}
	setDefaultGC(getenv)
	log, err := newLogger(cfg.LogFormat)
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()
	restore, err := takeTerminal()
	if err != nil {
		log.Warn("could not take the terminal's foreground; under make run, Ctrl-C then also reaches make, which reports status 130", zap.Error(err))
	}
	defer restore()
	// Bind before the store opens and the policy's tests run (seconds):
	// an address in use, a gateway left running say, fails now.
	ls, err := server.Listen(cfg)
	if err != nil {
		return err
	}
	app, err := server.Open(ctx, cfg, log, versionInfo().Version)
	if err != nil {
		_ = ls.Close()
		return err
	}
	defer func() { _ = app.Close() }()
	if devEnv != nil {
		if err := devEnv.seed(ctx, app, out, "http://"+ls.Main.Addr().String()); err != nil {
			_ = ls.Close()
			return err
		}
	}
	fields, err := startupSummary(cfg, ls)
	if err != nil {
		_ = ls.Close()
		return err
	}
	log.Info("mcpgate listening", fields...)
	if err := app.Serve(ctx, ls, log); err != nil {
		return err
	}
	log.Info("mcpgate stopped cleanly")
	return nil
}

// newLogger returns a zap logger: JSON for production, console for make run,
// coloured only when its output (stderr) is a terminal, so that a log file
// or a pipe gets no ANSI escape codes. The console log carries a stack trace
// from errors on, as the JSON one does (zap's development default, from
// warnings on, printed Go frames under each warning of an ordinary start).
// Tokens and secrets are never passed to it.
func newLogger(format string) (*zap.Logger, error) {
	if format == "console" {
		cfg := zap.NewDevelopmentConfig()
		cfg.EncoderConfig = consoleEncoderConfig(term.IsTerminal(int(os.Stderr.Fd())))
		return cfg.Build(zap.AddStacktrace(zapcore.ErrorLevel))
	}
	return zap.NewProduction()
}

// consoleEncoderConfig is the console encoding of make run's log: levels
// in capitals, coloured when colour.
func consoleEncoderConfig(colour bool) zapcore.EncoderConfig {
	c := zap.NewDevelopmentEncoderConfig()
	c.EncodeLevel = zapcore.CapitalLevelEncoder
	if colour {
		c.EncodeLevel = zapcore.CapitalColorLevelEncoder
	}
	return c
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func newMigrateCmd(getenv func(string) string) *cobra.Command {
	return withEnv(&cobra.Command{
		Use:   "migrate",
		Short: "create the store's tables or bring them up to date, then exit",
		Long: `Apply the database migrations to the store MCPGATE_DATABASE_URL names and
exit. A SQLite file that does not exist is created. "serve" migrates at start
too; run this to prepare a database before the first gateway starts.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			s, err := server.OpenStore(c.Context(), databaseURL(getenv))
			if err != nil {
				return err
			}
			return s.Close()
		},
	}, databaseURLEnv)
}

// databaseURL is MCPGATE_DATABASE_URL or its default.
func databaseURL(getenv func(string) string) string {
	if url := getenv("MCPGATE_DATABASE_URL"); url != "" {
		return url
	}
	return config.DefaultDatabaseURL
}
