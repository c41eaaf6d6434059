//! The command line of shared/spec/cli.md, as clap definitions.

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
    /// The page-table geometries the model knows
    Geometry {
        #[command(subcommand)]
        what: GeometryCmd,
    },
    /// How a virtual address is split: per level its name, bit range and index, then the offset
    Explain(ExplainArgs),
}

#[derive(Subcommand)]
pub enum GeometryCmd {
    /// List every preset geometry
    List {
        #[arg(long)]
        json: bool,
    },
    /// Show one geometry (a preset name or a geometry TOML file)
    Show {
        name: String,
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
    #[arg(long)]
    pub json: bool,
}
