//! The daily log file, private (0600) whatever the umask: tracing-appender rotates and prunes
//! the files but opens them with the process's umask and no mode of its own, so this writer
//! wraps it and creates each day's file 0600 before tracing-appender writes to it.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tracing_appender::rolling::RollingFileAppender;

/// Name prefix and suffix of the daily files: `agentd.YYYY-MM-DD.log`.
pub const PREFIX: &str = "agentd";
pub const SUFFIX: &str = "log";

/// A [`RollingFileAppender`] (daily, UTC) whose files are created 0600.
pub struct PrivateDaily {
    inner: RollingFileAppender,
    dir: PathBuf,
    /// The UTC day (days since the epoch) whose file was last made private.
    day: Option<u64>,
}

impl PrivateDaily {
    /// Wraps an appender built by `build` in `dir`; today's file is created 0600 first, so the
    /// appender opens it as it is.
    pub fn new(
        dir: &Path,
        build: impl FnOnce() -> anyhow::Result<RollingFileAppender>,
    ) -> anyhow::Result<PrivateDaily> {
        let day = today();
        make_private(&dir.join(file_name(day)))?;
        Ok(PrivateDaily {
            inner: build()?,
            dir: dir.to_owned(),
            day: Some(day),
        })
    }

    /// After the day changed: the new day's file exists and is 0600 (created so before the
    /// appender opens it, or made so right after it did). Errors cannot be logged from the log
    /// writer itself; the file then keeps what the appender gave it, in the 0700 state dir.
    fn keep_private(&mut self) {
        let day = today();
        if self.day != Some(day) {
            self.day = Some(day);
            let _ = make_private(&self.dir.join(file_name(day)));
        }
    }
}

impl Write for PrivateDaily {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.keep_private();
        let written = self.inner.write(buf);
        // The appender may have rolled over during this write, after the check above.
        self.keep_private();
        written
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Opens (creating if needed) a log file 0600: regular only, no symlink followed, and a file
/// that exists already is set to 0600 too (it is the daemon's, in its own dir).
fn make_private(path: &Path) -> anyhow::Result<()> {
    use crate::platform;
    let file: File = crate::regular_file::open_with(
        path,
        platform::create_mode(
            std::fs::OpenOptions::new().append(true).create(true),
            crate::paths::PRIVATE_FILE_MODE,
        ),
    )?;
    platform::set_file_mode(&file, crate::paths::PRIVATE_FILE_MODE)?;
    Ok(())
}

/// Today in UTC as days since the epoch (tracing-appender rotates on UTC days).
fn today() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs() / 86_400)
}

/// `agentd.YYYY-MM-DD.log` for a UTC day, as tracing-appender names it: the date part of the
/// day's start in RFC 3339 (humantime). A day humantime cannot write (past the year 9999, where
/// tracing-appender's own clock gives out too) is named by its number.
fn file_name(day: u64) -> String {
    let start = day
        .checked_mul(86_400)
        .and_then(|seconds| UNIX_EPOCH.checked_add(Duration::from_secs(seconds)));
    let mut stamp = String::new();
    if let Some(start) = start {
        let _ = write!(stamp, "{}", humantime::format_rfc3339_seconds(start));
    }
    match stamp.get(..10) {
        Some(date) => format!("{PREFIX}.{date}.{SUFFIX}"),
        None => format!("{PREFIX}.{day}.{SUFFIX}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_become_dated_file_names() {
        for (day, date) in [
            (0, "1970-01-01"),
            (11_016, "2000-02-29"),
            (11_017, "2000-03-01"),
            (20_787, "2026-11-30"),
            (20_818, "2026-12-31"),
            (20_819, "2027-01-01"),
            (2_932_896, "9999-12-31"),
        ] {
            assert_eq!(file_name(day), format!("agentd.{date}.log"));
        }
        assert_eq!(file_name(2_932_897), "agentd.2932897.log");
        assert_eq!(file_name(u64::MAX), format!("agentd.{}.log", u64::MAX));
    }

    /// The file this writer makes private is the one tracing-appender writes to, and it is 0600
    /// (the appender alone leaves it to the umask: 0644 under 022).
    #[test]
    fn the_appenders_file_is_ours_and_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let build = || {
            Ok(tracing_appender::rolling::Builder::new()
                .rotation(tracing_appender::rolling::Rotation::DAILY)
                .filename_prefix(PREFIX)
                .filename_suffix(SUFFIX)
                .build(dir.path())?)
        };
        let mut writer = PrivateDaily::new(dir.path(), build).unwrap();
        writer.write_all(b"line\n").unwrap();
        writer.flush().unwrap();
        let files: Vec<PathBuf> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .collect();
        assert_eq!(files.len(), 1, "{files:?}");
        assert_eq!(std::fs::read_to_string(&files[0]).unwrap(), "line\n");
        let mode = std::fs::metadata(&files[0]).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
}
