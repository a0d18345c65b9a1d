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
	var appUser string
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Apply the database migrations and exit",
		Long: `Apply the database migrations and exit. Run it once, as the schema's owner,
before the replicas of a new release start (they wait for it when
database_migrations is external).

--app-user NAME also creates the user the replicas connect as (or sets its
password), with SELECT, INSERT, UPDATE and DELETE on the schema and nothing
else; its password comes from RINGJOB_APP_DATABASE_PASSWORD.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(fl.config, a.getenv, &fl)
			if err != nil {
				return err
			}
			var user *appUserSpec
			if appUser != "" {
				pw := a.getenv("RINGJOB_APP_DATABASE_PASSWORD")
				if pw == "" {
					return usageErrorf("--app-user %s: set RINGJOB_APP_DATABASE_PASSWORD to its password", appUser)
				}
				user = &appUserSpec{name: appUser, password: pw}
			}
			return migrate(cmd.Context(), cfg, user, a.stdout)
		},
	}
	fl.registerStore(cmd.Flags()) // migrate serves nothing: no --listen
	cmd.Flags().StringVar(&appUser, "app-user", "", "create or update this least-privilege user for the replicas (password: env RINGJOB_APP_DATABASE_PASSWORD)")
	return cmd
}
