//! `--layout`, `--values`, `--memory`, `--table`: each axis chosen on its own, over a
//! preset (`--design`), for every command that opens a Shale store.

use shale::{LayoutKind, MemoryKind, Options, TableKind, ValuesKind};

/// One flag per axis; each one given replaces the preset's choice on that axis.
#[derive(clap::Args, Debug, Clone, Default, PartialEq, Eq)]
pub struct AxisFlags {
    /// Layout: leveled, flsm, trie or lwc (default: the design's).
    #[arg(long)]
    pub layout: Option<String>,
    /// Value placement: inline or vlog (default: the design's).
    #[arg(long)]
    pub values: Option<String>,
    /// Memory component: skiplist or flodb (default: the design's).
    #[arg(long)]
    pub memory: Option<String>,
    /// Table format: sst, htable or dtable (default: the layout's).
    #[arg(long)]
    pub table: Option<String>,
}

impl AxisFlags {
    /// Whether any axis was chosen on the command line.
    pub fn any(&self) -> bool {
        self.layout.is_some()
            || self.values.is_some()
            || self.memory.is_some()
            || self.table.is_some()
    }

    /// `o` with the chosen axes; the table format follows a chosen layout unless given.
    ///
    /// # Errors
    /// An unknown name, or a table format the layout does not read.
    pub fn apply(&self, o: &mut Options) -> shale::Result<()> {
        if let Some(l) = &self.layout {
            o.layout = LayoutKind::parse(l)?;
            o.table_format = shale::Axes::table_for(o.layout);
        }
        if let Some(v) = &self.values {
            o.values = ValuesKind::parse(v)?;
        }
        if let Some(m) = &self.memory {
            o.memory = MemoryKind::parse(m)?;
        }
        if let Some(t) = &self.table {
            o.table_format = TableKind::parse(t)?;
        }
        o.axes().check()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each flag's help names every choice the library has (a new layout or table format
    /// must be added to the help text too).
    #[test]
    fn the_help_names_every_choice() {
        use clap::CommandFactory;
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            axes: AxisFlags,
        }
        let cmd = Cli::command();
        let help = |flag: &str| -> String {
            let arg = cmd
                .get_arguments()
                .find(|a| a.get_long() == Some(flag))
                .unwrap_or_else(|| panic!("no --{flag}"));
            arg.get_help().map(|h| h.to_string()).unwrap_or_default()
        };
        let check = |flag: &str, names: Vec<&str>| {
            let h = help(flag);
            for n in names {
                assert!(h.contains(n), "--{flag} help {h:?} does not name {n}");
            }
        };
        check("layout", LayoutKind::ALL.iter().map(|k| k.name()).collect());
        check("values", ValuesKind::ALL.iter().map(|k| k.name()).collect());
        check("memory", MemoryKind::ALL.iter().map(|k| k.name()).collect());
        check("table", TableKind::ALL.iter().map(|k| k.name()).collect());
    }

    #[test]
    fn flags_replace_the_presets_axes() {
        let mut o = Options::preset("leveldb").unwrap();
        let f = AxisFlags {
            layout: Some("flsm".into()),
            values: Some("vlog".into()),
            ..AxisFlags::default()
        };
        f.apply(&mut o).unwrap();
        assert_eq!(o.axes().name(), "flsm+vlog+skiplist+sst");
        let f = AxisFlags {
            memory: Some("flodb".into()),
            ..AxisFlags::default()
        };
        f.apply(&mut o).unwrap();
        assert_eq!(o.axes().name(), "flsm+vlog+flodb+sst");
        let bad = AxisFlags {
            values: Some("blob".into()),
            ..AxisFlags::default()
        };
        let e = bad.apply(&mut o).unwrap_err().to_string();
        assert!(
            e.contains("unknown values \"blob\"") && e.contains("inline, vlog"),
            "{e}"
        );
        let bad = AxisFlags {
            table: Some("ptable".into()),
            ..AxisFlags::default()
        };
        let e = bad.apply(&mut o).unwrap_err().to_string();
        assert!(
            e.contains("unknown table \"ptable\"") && e.contains("sst"),
            "{e}"
        );
    }
}
