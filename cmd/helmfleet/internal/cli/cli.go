// Package cli is the helmfleet command: build, plan, diff and test a
// Flux repository across a fleet of in-memory members, over the public
// API of release/fleet (fleet.Config.Repository).
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/helmfleet/helmfleet/release/memory"
)

// Exit statuses, as terraform plan -detailed-exitcode.
const (
	ExitOK      = 0
	ExitError   = 1
	ExitChanges = 2
)

// exitError carries an exit status other than ExitError.
type exitError struct{ code int }

func (e *exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// options are the flags every command shares.
type options struct {
	fleetFile  string
	chartCache string
	output     string
	member     string
	gitDir     string
	gitPath    string
	kubeconfig string
	stdout     io.Writer
	stderr     io.Writer
}

// Main runs the command line args and returns the exit status.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmd := NewCommand(stdout, stderr)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(ctx)
	var ee *exitError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ee):
		return ee.code
	default:
		fmt.Fprintln(stderr, "helmfleet:", err)
		return ExitError
	}
}

// NewCommand returns the helmfleet command and its subcommands.
func NewCommand(stdout, stderr io.Writer) *cobra.Command {
	o := &options{stdout: stdout, stderr: stderr}
	root := &cobra.Command{
		Use:   "helmfleet",
		Short: "Build, plan, diff and test a Flux repository across a fleet of clusters, offline",
		Long: `helmfleet runs a Flux repository (Kustomizations, HelmReleases, their
sources) on every member of a fleet with helmfleet's engine: Flux's
semantics, Karmada's placement and overrides, each member's Kubernetes
version and API versions. Members are described by a fleet file (--fleet):
in-memory clusters, or kubeconfig contexts. plan plans against a context's
live cluster (its objects and Helm releases; nothing is written); build,
diff and test run an in-memory stand-in for it, with the Kubernetes version
and API versions read from the cluster.

Charts are read offline from --chart-cache, a directory of NAME-VERSION.tgz
archives (as helm pull writes them); nothing is downloaded.

Secret values are masked in every output. Progress goes to stderr.

Fleet file:

  bootstrap: bootstrap.yaml      # the flux-system Kustomization and its Karmada policies
  members:
    - name: dev-1
      labels: {env: dev}
      kubeVersion: "1.30"
      apiVersions: [monitoring.coreos.com/v1]
      objects: [...]             # on the member before Flux runs (cluster-vars, ...)
    - name: prod-1
      labels: {env: prod}
      context: prod-1            # a kubeconfig context (--kubeconfig, or kubeconfig: in this file)`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	pf := root.PersistentFlags()
	pf.StringVar(&o.fleetFile, "fleet", "", "fleet file: the members and the bootstrap file (required)")
	pf.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file of the members' contexts (default: the fleet file's kubeconfig, else $KUBECONFIG or ~/.kube/config, as kubectl)")
	pf.StringVar(&o.chartCache, "chart-cache", "", "directory of chart archives NAME-VERSION.tgz the releases' charts are read from")
	root.AddCommand(o.buildCmd(), o.planCmd(), o.diffCmd(), o.testCmd())
	return root
}

func (o *options) buildCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "build PATH",
		Short: "Render every unit of the repository per member, as YAML",
		Long: `build runs the repository at PATH on in-memory members and writes, per
member, every Kustomization with the objects it applies and every
HelmRelease with the objects its chart renders, after placement, overrides
and substitutions. Secret values are masked.`,
		Example: `  helmfleet build ./repo --fleet fleet.yaml --chart-cache ~/.cache/charts
  helmfleet build ./repo --fleet fleet.yaml --chart-cache charts --member prod-1`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := o.members(cmd.Context(), false)
			if err != nil {
				return err
			}
			if o.member != "" {
				if _, ok := m.spec.member(o.member); !ok {
					return fmt.Errorf("--member %s: not a member of the fleet", o.member)
				}
			}
			p, _, err := m.apply(cmd.Context(), args[0], true)
			if err != nil {
				return err
			}
			return writeBuild(cmd.Context(), o.stdout, p, m.getters(), memberNames(m.spec), o.member)
		},
	}
	c.Flags().StringVar(&o.member, "member", "", "write only this member's units")
	return c
}

func (o *options) planCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "plan PATH",
		Short: "Show what each member would change",
		Long: `plan plans the repository at PATH on the fleet file's members, each an
in-memory cluster holding the file's objects, or the live cluster of a
member's kubeconfig context (what runs there now: its objects and Helm
releases; plan writes nothing), and shows every unit per member.
Exit status: 0 no change, 2 changes, 1 error.`,
		Example: `  helmfleet plan ./repo --fleet fleet.yaml --chart-cache charts
  helmfleet plan ./repo --fleet fleet.yaml --chart-cache charts -o markdown > plan.md`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(o.output); err != nil {
				return err
			}
			m, err := o.members(cmd.Context(), true)
			if err != nil {
				return err
			}
			_, p, err := m.plan(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			r := reportOf(p, memberNames(m.spec), true)
			r.Head = args[0]
			return o.finish(r)
		},
	}
	o.reportFlags(c)
	return c
}

func (o *options) diffCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "diff BASE HEAD",
		Short: "Show a change's effect on every member: the units and objects it changes",
		Long: `diff runs BASE on in-memory members, then plans HEAD on them: for every
member, the units that change and the diff of their objects, Secret values
masked. BASE and HEAD are directories, or with --git two refs of a Git
repository (with --path, the repository's directory within it).
Exit status: 0 no change, 2 changes, 1 error.`,
		Example: `  helmfleet diff ./main ./pr --fleet fleet.yaml --chart-cache charts
  helmfleet diff origin/main HEAD --git . --path clusters-repo --fleet fleet.yaml --chart-cache charts -o markdown`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(o.output); err != nil {
				return err
			}
			base, head := args[0], args[1]
			if o.gitDir != "" {
				tmp, err := os.MkdirTemp("", "helmfleet-diff-")
				if err != nil {
					return err
				}
				defer os.RemoveAll(tmp)
				if base, err = gitTree(cmd.Context(), o.gitDir, args[0], o.gitPath, tmp); err != nil {
					return err
				}
				if head, err = gitTree(cmd.Context(), o.gitDir, args[1], o.gitPath, tmp); err != nil {
					return err
				}
			}
			m, err := o.members(cmd.Context(), false)
			if err != nil {
				return err
			}
			bp, applyErr, err := m.apply(cmd.Context(), base, false)
			if err != nil {
				return fmt.Errorf("base %s: %w", args[0], err)
			}
			if applyErr != nil || len(bp.Errors) > 0 {
				fmt.Fprintf(o.stderr, "helmfleet: warning: base %s does not run cleanly: %v\n", args[0], errors.Join(append([]error{applyErr}, bp.Errors...)...))
			}
			_, p, err := m.plan(cmd.Context(), head)
			if err != nil {
				return fmt.Errorf("head %s: %w", args[1], err)
			}
			r := reportOf(p, memberNames(m.spec), false)
			r.Base, r.Head = args[0], args[1]
			return o.finish(r)
		},
	}
	o.reportFlags(c)
	c.Flags().StringVar(&o.gitDir, "git", "", "BASE and HEAD are refs of the Git repository at this directory")
	c.Flags().StringVar(&o.gitPath, "path", "", "with --git: the Flux repository's directory within the Git repository")
	return c
}

func (o *options) testCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "test PATH",
		Short: "CI gate: every unit renders, is placed and runs on every member",
		Long: `test runs the repository at PATH on the in-memory members and fails
(exit status 1) on any problem: a release that does not render for a
member's Kubernetes version (its chart's kubeVersion included), a unit no
policy places, a policy, override or decode error, a Kustomization that
does not build. Each problem names the member, the unit and the
repository directory it is built from.`,
		Example: `  helmfleet test ./repo --fleet fleet.yaml --chart-cache charts
  helmfleet test ./repo --fleet fleet.yaml --chart-cache charts -o json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.output != FormatTable && o.output != FormatJSON && o.output != FormatMarkdown {
				return fmt.Errorf("-o %s: test writes table, json or markdown", o.output)
			}
			m, err := o.members(cmd.Context(), false)
			if err != nil {
				return err
			}
			p, applyErr, err := m.apply(cmd.Context(), args[0], true)
			if err != nil {
				return err
			}
			probs := problemsOf(p, applyErr)
			if err := writeProblems(o.stdout, o.output, len(p.Items)+len(p.Kustomizations), probs); err != nil {
				return err
			}
			if len(probs) > 0 {
				return &exitError{code: ExitError}
			}
			return nil
		},
	}
	c.Flags().StringVarP(&o.output, "output", "o", FormatTable, "output format: table, json or markdown")
	return c
}

// reportFlags adds the flags of the commands that write a Report.
func (o *options) reportFlags(c *cobra.Command) {
	c.Flags().StringVarP(&o.output, "output", "o", FormatTable, "output format: table, diff, json or markdown")
	c.Flags().StringVar(&o.member, "member", "", "show only this member")
}

// finish writes r and returns the exit status it calls for.
func (o *options) finish(r *Report) error {
	if err := r.only(o.member); err != nil {
		return err
	}
	if err := r.Render(o.stdout, o.output); err != nil {
		return err
	}
	switch {
	case r.HasErrors():
		return &exitError{code: ExitError}
	case r.Changes():
		return &exitError{code: ExitChanges}
	}
	return nil
}

// members loads the fleet file and makes its members; live says a
// member with a kubeconfig context is its live cluster (plan), not an
// in-memory stand-in.
func (o *options) members(ctx context.Context, live bool) (*members, error) {
	if o.fleetFile == "" {
		return nil, errors.New("--fleet is required: the fleet file naming the members and the bootstrap file")
	}
	spec, err := LoadFleetFile(o.fleetFile)
	if err != nil {
		return nil, err
	}
	return newMembers(ctx, spec, NewCacheResolver(o.chartCache), o.stderr, live, spec.kubeconfigPath(o.kubeconfig))
}

// getters returns the members' clusters by name.
func (m *members) getters() map[string]objectGetter {
	out := map[string]objectGetter{}
	for _, c := range m.clusters {
		out[c.Facts.Name] = c.Cluster.(*memory.Cluster)
	}
	return out
}
