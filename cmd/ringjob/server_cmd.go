package main

import (
	"github.com/spf13/cobra"
)

func (a *app) newServerCommand() *cobra.Command {
	var fl flagValues
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run a scheduler replica with the API",
		Long: `Run a scheduler replica with the REST API and the console.

Configuration comes from the YAML file (--config or RINGJOB_CONFIG), then
RINGJOB_* environment variables, then flags. See README.md for every option.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(fl.config, a.getenv, &fl)
			if err != nil {
				return err
			}
			if err := serve(cmd.Context(), cfg, a.stdout, a.stderr); err != nil {
				if cfg.Log.Format == "json" {
					newLogger(cfg, a.stdout).WithError(err).Error("ringjob server failed")
					return exitCode{code: exitFailure}
				}
				return err
			}
			return nil
		},
	}
	fl.register(cmd.Flags())
	return cmd
}

func (a *app) newMigrateCommand() *cobra.Command {
	var fl flagValues
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Apply the database migrations and exit",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(fl.config, a.getenv, &fl)
			if err != nil {
				return err
			}
			return migrate(cmd.Context(), cfg, a.stdout)
		},
	}
	fl.registerStore(cmd.Flags()) // migrate serves nothing: no --listen
	return cmd
}
