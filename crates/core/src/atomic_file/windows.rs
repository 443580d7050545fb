//! The Windows steps of the writer, by path: the temp file made with `CREATE_NEW` beside the
//! target, written and synced, then moved over it (`std::fs::rename` is `MoveFileExW` with
//! `MOVEFILE_REPLACE_EXISTING`). A directory cannot be opened for a sync there, and a file has
//! no mode bits, so `mode` and `keep_existing_mode` change nothing.

use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, Write};
use std::path::Path;

use super::{Failure, Options, name_and_dir, step, with_free_temp_name};

/// As [`super::replace_atomically`], with [`Options`]. Blocking.
pub fn replace_atomically_with(
    path: &Path,
    bytes: &[u8],
    _mode: u32,
    options: &Options<'_>,
) -> io::Result<()> {
    let (name, dir) = name_and_dir(path)?;
    with_free_temp_name(name, |temp| {
        replace_through(&dir.join(temp), path, name, bytes, options)
    })
}

/// One attempt through the temp file `temp`.
fn replace_through(
    temp: &Path,
    target: &Path,
    name: &OsStr,
    bytes: &[u8],
    options: &Options<'_>,
) -> Result<(), Failure> {
    let shown = temp.file_name().unwrap_or_default();
    let mut file = match File::create_new(temp) {
        Ok(file) => file,
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {
            return Err(Failure::Taken(error));
        }
        Err(error) => return Err(Failure::Other(step("cannot create", shown, error))),
    };
    let written = file
        .write_all(bytes)
        .and_then(|()| file.sync_all())
        .and_then(|()| match options.before_rename {
            Some(before_rename) => before_rename(),
            None => Ok(()),
        })
        .map_err(|error| step("cannot write", shown, error));
    drop(file);
    let renamed = written.and_then(|()| {
        // The writer itself: this is the rename the lint sends everyone else here for.
        #[allow(clippy::disallowed_methods)]
        std::fs::rename(temp, target).map_err(|error| {
            step(
                &format!("cannot rename {} over", shown.to_string_lossy()),
                name,
                error,
            )
        })
    });
    if let Err(error) = renamed {
        let _ = std::fs::remove_file(temp);
        return Err(Failure::Other(error));
    }
    Ok(())
}
