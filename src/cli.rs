//! The command line of docs/cli.md, as clap definitions.

use clap::{Args, Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "ptlab",
    version,
    about = "A page-table laboratory: a model of page tables, MMU and Linux mm, checked against the real kernel",
    long_about = None
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// The main job: answer the seeds' questions on this machine, with a report
    Study(StudyArgs),
    /// The page-table geometries the model knows
    Geometry {
        #[command(subcommand)]
        what: GeometryCmd,
    },
    /// How a virtual address is split: per level its name, bit range and index, then the offset
    Explain(ExplainArgs),
    /// The built-in workloads
    Workloads {
        #[command(subcommand)]
        what: WorkloadsCmd,
    },
    /// Run one workload (a built-in name or a TOML file) on the model or the kernel
    Run(RunArgs),
    /// The same workload under several configurations, side by side, with statistics
    Compare(CompareArgs),
    /// Replay a trace (from `ptlab record` or `ptlab trace`) on the model
    Replay(ReplayArgs),
    /// Run a program natively and record its address-space calls and page faults into a trace
    Record(RecordArgs),
    /// Run a sweep file (workloads by configuration axes) on this machine's cores into one table
    Sweep(SweepArgs),
    /// Run a program under QEMU user mode and trace its every load and store and its memory calls
    Trace(TraceArgs),
    /// Convert a trace from another tool (ChampSim, valgrind lackey) into a ptlab trace
    Import {
        #[command(subcommand)]
        what: ImportCmd,
    },
    /// Run workloads on the kernel and on the model configured like this host; exit 1 on any difference
    Validate(ValidateArgs),
    /// A live process's page tables: tables per level, VmPTE explained, other geometries
    Inspect(InspectArgs),
    /// Measure this host's costs (faults, tables, system calls, shootdowns, locks, memory, TLB misses) into a cost file
    Calibrate(CalibrateArgs),
    /// This host's virtual-memory latency hazards
    Audit {
        /// Print one JSON document on stdout
        #[arg(long)]
        json: bool,
        /// Skip the one-second TLB-shootdown sample and the reclaim experiment
        #[arg(long)]
        fast: bool,
    },
}

#[derive(Subcommand)]
pub enum WorkloadsCmd {
    /// List the built-in workloads and the seed each reproduces
    List {
        /// Print one JSON document on stdout
        #[arg(long)]
        json: bool,
        /// List the validation suite instead
        #[arg(long)]
        validation: bool,
    },
    /// Print a built-in workload's TOML
    Show {
        /// A built-in or validation-suite workload name
        name: String,
    },
}

/// The model options of docs/cli.md.
#[derive(Args, Default, Clone)]
pub struct ModelOpts {
    /// Page-table geometry (a preset name or a geometry file)
    #[arg(long)]
    pub geometry: Option<String>,
    /// global, split-pte or split-pmd
    #[arg(long)]
    pub locking: Option<String>,
    /// off, on (Linux) or eager (free a PTE table when its last entry goes)
    #[arg(long)]
    pub reclaim: Option<String>,
    /// always, madvise or never (default: this host's)
    #[arg(long)]
    pub thp: Option<String>,
    /// Multi-size THP policies, e.g. 64k=always,16k=madvise
    #[arg(long)]
    pub mthp: Option<String>,
    /// TLB preset or a TLB TOML file (the presets listed from the model's own table)
    #[arg(long, help = tlb_help())]
    pub tlb: Option<String>,
    /// Modeled CPUs
    #[arg(long)]
    pub cpus: Option<u32>,
    /// Price predicted time with this cost file, or a shipped one by name (xeon-kvm-2026,
    /// bare-metal-2013) [default: $PTLAB_COSTS, else this host's own file, measured by a quick
    /// calibration the first time and kept in ~/.cache/ptlab/costs]
    #[arg(long, value_name = "FILE|NAME")]
    pub costs: Option<String>,
    /// KVM's paravirtual remote TLB flush: on or off (default: this host's)
    #[arg(long = "pv-flush")]
    pub pv_flush: Option<String>,
    /// A TOML file holding any of the above, or the same keys inline: KEY=VALUE,...
    #[arg(long = "config")]
    pub config: Option<String>,
}

/// How runs are repeated and reported.
#[derive(Args, Clone)]
pub struct RepeatOpts {
    /// Measured runs per configuration
    #[arg(long, default_value_t = 1)]
    pub repeat: usize,
    /// Runs thrown away first (default: 1 on the kernel when repeating)
    #[arg(long)]
    pub warmup: Option<usize>,
    /// Stop a run (kernel or model) past this many seconds
    #[arg(long, default_value_t = 120)]
    pub timeout: u64,
    /// Kernel backend: pin each workload thread to a CPU of its own (thread i on the i-th CPU
    /// ptlab may run on), so that no thread migrates or shares a CPU mid-run
    #[arg(long)]
    pub pin_threads: bool,
    #[command(flatten)]
    pub output: OutputOpts,
}

/// How the results of `run`, `compare` and `replay` are printed and
/// exported (one set of flags, the same for each).
#[derive(Args, Clone, Default)]
pub struct OutputOpts {
    /// Print one JSON document on stdout (every run's values included)
    #[arg(long)]
    pub json: bool,
    /// Print every run's values as CSV on stdout (one row per configuration, mark, counter and run)
    #[arg(long, conflicts_with = "json")]
    pub csv: bool,
    /// Also write the JSON document to FILE (beside the table)
    #[arg(long, value_name = "FILE")]
    pub export_json: Option<std::path::PathBuf>,
    /// Also write every run's values as CSV to FILE (beside the table)
    #[arg(long, value_name = "FILE")]
    pub export_csv: Option<std::path::PathBuf>,
    /// Also write the tables as Markdown to FILE (beside the table)
    #[arg(long, value_name = "FILE")]
    pub export_markdown: Option<std::path::PathBuf>,
    /// Show every counter in the table (default: the format's counters and the model's main ones)
    #[arg(long)]
    pub all: bool,
}

#[derive(Args)]
pub struct RecordArgs {
    /// Where the trace goes
    #[arg(long, short, default_value = "record.ptl")]
    pub out: std::path::PathBuf,
    /// Kill the program past this many seconds
    #[arg(long, default_value_t = 600)]
    pub timeout: u64,
    /// Diagnostic: run only this part of the recorder and print what the program cost (the trace is incomplete)
    #[arg(long, value_enum)]
    pub only: Option<RecordPart>,
    /// The program and its arguments (after --)
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    pub command: Vec<String>,
}

/// The parts of the recorder `record --only` runs (a diagnostic).
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum RecordPart {
    /// Nothing: the program started the same way, untraced
    Native,
    /// The fault events sampled and drained as a recording does, no ptrace
    Faults,
    /// The same fault events counting (no sample)
    FaultsCounting,
    /// The software page-fault event sampled with its address instead
    FaultsSoftware,
    /// The ptrace of the memory calls, no fault events
    Calls,
    /// Everything (a full recording), with the same diagnostic line
    All,
}

#[derive(Args)]
pub struct TraceArgs {
    /// Where the trace goes
    #[arg(long, short, default_value = "trace.ptl")]
    pub out: std::path::PathBuf,
    /// Write every access (no same-page filter in the plugin; TLB counts are the same, the trace larger)
    #[arg(long)]
    pub no_filter: bool,
    /// The program and its arguments (after --)
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    pub command: Vec<String>,
}

#[derive(Subcommand)]
pub enum ImportCmd {
    /// A ChampSim instruction trace (64-byte input_instr records; xz, gzip, bzip2 or uncompressed, told by content); regions inferred from 2 MiB gaps
    Champsim {
        #[command(flatten)]
        args: ImportArgs,
        /// CloudSuite's 96-byte cloudsuite_instr records (ChampSim's --cloudsuite)
        #[arg(long)]
        cloudsuite: bool,
    },
    /// valgrind --tool=lackey --trace-mem=yes output (text, or compressed as above); regions inferred from 2 MiB gaps
    Lackey(ImportArgs),
}

#[derive(Args)]
pub struct ImportArgs {
    /// The file to import
    pub file: std::path::PathBuf,
    /// Where the trace goes (default: FILE with .ptl)
    #[arg(long, short)]
    pub out: Option<std::path::PathBuf>,
}

/// `--tlb`'s help: the presets named from the model's table, so that a
/// new preset is listed without editing this text.
fn tlb_help() -> String {
    format!(
        "TLB preset ({}) or a TLB TOML file",
        mmu::config::PRESET_NAMES.join(", ")
    )
}

#[derive(Args)]
pub struct ReplayArgs {
    /// A trace file
    pub trace: std::path::PathBuf,
    #[command(flatten)]
    pub model: ModelOpts,
    #[command(flatten)]
    pub window: WindowOpts,
    /// Measured replays per configuration
    #[arg(long, default_value_t = 1)]
    pub repeat: usize,
    /// Replays thrown away first (default: 1 when repeating)
    #[arg(long)]
    pub warmup_runs: Option<usize>,
    /// Stop the replay past this many seconds and print the counters so far, marked partial (default: no limit)
    #[arg(long)]
    pub timeout: Option<u64>,
    #[command(flatten)]
    pub output: OutputOpts,
}

/// The part of a trace `replay` measures (docs/trace.md, "Windows"), as
/// ChampSim's warm-up and simulation instructions: in instructions where
/// the trace has them (an imported ChampSim or lackey trace), else in
/// accesses.
#[derive(Args, Clone, Copy, Default)]
pub struct WindowOpts {
    /// Pass over the first N instructions, or accesses where the trace has no instructions (not replayed; the regions' maps and unmaps are)
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub skip: u64,
    /// Replay N instructions (or accesses) after the skip without counting them (TLBs, tables and pages stay warm)
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub warmup: u64,
    /// Count N instructions (or accesses) after the warm-up, then stop (default: to the end of the trace)
    #[arg(long, value_name = "N")]
    pub limit: Option<u64>,
    /// Populate every mapping as MAP_POPULATE would and start counting at the first access (no first-touch faults)
    #[arg(long)]
    pub prefault: bool,
}

#[derive(Args)]
pub struct RunArgs {
    /// A built-in workload name, a workload TOML file or a trace file
    pub workload: String,
    /// model or kernel
    #[arg(long, default_value = "model")]
    pub backend: String,
    #[command(flatten)]
    pub model: ModelOpts,
    #[command(flatten)]
    pub repeat: RepeatOpts,
}

#[derive(Args)]
pub struct CompareArgs {
    /// A built-in workload name, a workload TOML file or a trace file
    pub workload: String,
    /// A configuration: KEY=VALUE,... inline (backend=kernel, geometry=x86-64-5l, ...) or a TOML file; repeat for each column
    #[arg(long = "config", required = true)]
    pub configs: Vec<String>,
    /// Price predicted time with this cost file, or a shipped one by name (xeon-kvm-2026,
    /// bare-metal-2013) [default: $PTLAB_COSTS, else this host's own file, measured by a quick
    /// calibration the first time and kept in ~/.cache/ptlab/costs]
    #[arg(long, value_name = "FILE|NAME")]
    pub costs: Option<String>,
    #[command(flatten)]
    pub repeat: RepeatOpts,
}

#[derive(Args)]
pub struct SweepArgs {
    /// A sweep file (TOML: workloads, [config], [axes]; see docs/sweep.md)
    pub file: std::path::PathBuf,
    /// Tasks run at once (default: this machine's cores)
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Write the table to FILE.csv or FILE.json instead of stdout
    #[arg(long, value_name = "FILE")]
    pub out: Option<std::path::PathBuf>,
    /// On stdout, the table as one JSON document instead of CSV
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct ValidateArgs {
    /// Workloads to validate (default: the shipped validation suite)
    pub workloads: Vec<String>,
    /// Model options to use instead of this host's (to see validate fail)
    #[command(flatten)]
    pub model: ModelOpts,
    /// Print one JSON document on stdout
    #[arg(long)]
    pub json: bool,
    /// Compare time instead of counters: the model's predicted time against the kernel's measured one (default workloads: the suite and the built-ins, 1 and 2 threads)
    #[arg(long)]
    pub time: bool,
    /// With --time: kernel runs (and model runs, alternating) per workload
    #[arg(long, default_value_t = 5, requires = "time")]
    pub repeat: usize,
    /// With --time: print the table as Markdown (for BENCHMARKS.md)
    #[arg(long, requires = "time", conflicts_with = "json")]
    pub markdown: bool,
    /// Let the scheduler place the kernel runs' threads (default: each pinned to a CPU of its
    /// own as with `run --pin-threads`, a fork's child on its parent's CPU, so that no page
    /// waits in another CPU's LRU batch when the workload reclaims it)
    #[arg(long, conflicts_with = "time")]
    pub unpinned: bool,
}

#[derive(Subcommand)]
pub enum GeometryCmd {
    /// List every preset geometry
    List {
        /// Print one JSON document on stdout
        #[arg(long)]
        json: bool,
    },
    /// Show one geometry (a preset name or a geometry TOML file)
    Show {
        /// A preset name or a geometry TOML file
        name: String,
        /// Print one JSON document on stdout
        #[arg(long)]
        json: bool,
    },
}

#[derive(Args)]
pub struct ExplainArgs {
    /// Geometry preset name or geometry TOML file
    #[arg(long, default_value = "x86-64-4l")]
    pub geometry: String,
    /// Virtual address (hex with 0x, or decimal)
    pub address: String,
    /// Print one JSON document on stdout
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct StudyArgs {
    /// The short version (under a minute)
    #[arg(long)]
    pub quick: bool,
    /// Also run the production-scale cases: the reclaim slides' 55 TB process
    /// on the model (minutes, up to 16 GiB of memory)
    #[arg(long)]
    pub production: bool,
    /// Where to write index.html and study.json
    #[arg(long, default_value = "ptlab-study")]
    pub out: std::path::PathBuf,
    /// Print study.json on stdout instead of the summary
    #[arg(long)]
    pub json: bool,
    /// Price predicted time with this cost file, or a shipped one by name (xeon-kvm-2026,
    /// bare-metal-2013) [default: $PTLAB_COSTS, else this host's own file, measured by a quick
    /// calibration the first time and kept in ~/.cache/ptlab/costs]
    #[arg(long, value_name = "FILE|NAME")]
    pub costs: Option<String>,
    /// Only these sections, by id (the ids listed from the study's own
    /// questions, experiment::study::section_ids)
    #[arg(long, value_name = "ID,...", value_delimiter = ',', help = only_help())]
    pub only: Vec<String>,
    /// Your program's recorded trace (ptlab record, trace or import): the
    /// five-level, RISC-V 64 KiB and broadcast sections also replay it and
    /// say what they predict for it
    #[arg(long, value_name = "TRACE")]
    pub trace: Option<std::path::PathBuf>,
}

#[derive(Args)]
pub struct InspectArgs {
    /// The process id to inspect
    pub pid: String,
    /// Print one JSON document on stdout
    #[arg(long)]
    pub json: bool,
    /// A geometry for the what-if (preset or file); repeat for several
    /// (default: x86-64-5l, riscv-sv39-64k, arm64-4k-48, arm64-16k-48, arm64-64k-48)
    #[arg(long)]
    pub geometry: Vec<String>,
    /// Stop reading page states after this many seconds (the result says it is partial)
    #[arg(long, default_value_t = 20.0)]
    pub time_limit: f64,
    /// Read 8-byte pagemap entries instead of the PAGEMAP_SCAN ioctl (as on kernels before 6.7)
    #[arg(long)]
    pub pagemap_entries: bool,
}

#[derive(Args)]
pub struct CalibrateArgs {
    /// Where to write the cost file
    #[arg(long, value_name = "FILE", default_value = "ptlab-costs.toml")]
    pub out: std::path::PathBuf,
    /// Larger sizes and more repetitions (a few minutes instead of under one)
    #[arg(long)]
    pub long: bool,
    /// Tiny sizes, for the test suite (figures too rough to use)
    #[arg(long, hide = true, conflicts_with = "long")]
    pub test_scale: bool,
    /// Measure even when other processes keep the host's CPUs busy (the figures will be slower and noisier)
    #[arg(long)]
    pub allow_busy: bool,
    /// Measure only this probe family (repeatable; e.g. `major-faults`) and write its figures into
    /// the --out file, keeping that file's other figures (it must exist)
    #[arg(long, value_name = "FAMILY")]
    pub only: Vec<String>,
    /// The host's load as a JSON reading instead of watching /proc (for tests)
    #[arg(long, hide = true, value_name = "JSON")]
    pub load_reading: Option<String>,
}

/// `study --only`'s help, its ids read from the study's questions (so that
/// adding a question adds its id here).
fn only_help() -> String {
    format!(
        "Only these sections, by id (comma-separated: {})",
        experiment::study::section_ids().join(", ")
    )
}
