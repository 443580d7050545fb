//! Commands that wipe filesystems, partition tables or raw devices: `mkfs*`, `wipefs`,
//! partitioners (`sgdisk --zap-all`, `sfdisk`, `parted … mklabel`), `dd of=/dev/…`, copies,
//! `shred` and `truncate` onto devices, `blkdiscard`, `cryptsetup luksFormat`, secure erases;
//! and redirections into a device or `/proc/sysrq-trigger`.

use super::paths::{Cwd, is_unsafe_device, is_variable};
use crate::permission::shell::is_redirection;

/// Partitioning programs: refused on a device unless only listing.
const PARTITIONERS: &[&str] = &["fdisk", "sfdisk", "cfdisk", "gdisk", "sgdisk", "parted"];

/// Options with which a partitioner only lists or checks.
const LISTING_OPTIONS: &[&str] = &[
    "-l",
    "--list",
    "-p",
    "--print",
    "-d",
    "--dump",
    "-J",
    "--json",
    "-s",
    "--show-size",
    "-V",
    "--verify",
    "-v",
    "-i",
    "--info",
    "-P",
    "--pretend",
];

/// `parted` commands that change a disk.
const PARTED_CHANGES: &[&str] = &[
    "mklabel",
    "mktable",
    "mkpart",
    "mkpartfs",
    "rm",
    "resizepart",
    "resize",
    "rescue",
    "name",
    "set",
    "toggle",
    "disk_set",
    "disk_toggle",
    "mkfs",
    "move",
    "cp",
];

/// Partitioner options that destroy or rewrite a partition table even beside a listing option.
const TABLE_WIPES: &[&str] = &[
    "--zap-all",
    "--zap",
    "--clear",
    "--delete",
    "--new",
    "--wipe",
];

/// The short spellings of [`TABLE_WIPES`] in `sgdisk` and `gdisk` (in `sfdisk`, `-d` dumps).
const GPT_TABLE_WIPES: &[&str] = &["-Z", "-z", "-o", "-d", "-n"];

/// `cryptsetup` actions that destroy what a device holds.
const CRYPTSETUP_WIPES: &[&str] = &[
    "luksFormat",
    "erase",
    "luksErase",
    "luksKillSlot",
    "reencrypt",
];

/// The special file whose writes reboot, crash or power off the kernel at once.
const SYSRQ_TRIGGER: &str = "/proc/sysrq-trigger";

/// Why this command (name and arguments, wrappers and redirections stripped) wipes a device.
pub(super) fn check(name: &str, args: &[String], cwd: &Cwd) -> Option<String> {
    let operands = || {
        args.iter()
            .filter(|arg| !arg.starts_with('-'))
            .map(|arg| cwd.resolve(arg))
    };
    let on_device = || operands().find(|operand| is_device_or_unknown(operand));
    match name {
        _ if name.starts_with("mkfs") || matches!(name, "mke2fs" | "mkswap" | "wipefs") => {
            Some("formats or wipes a filesystem".to_owned())
        }
        "blkdiscard" => Some("discards every block of a device".to_owned()),
        _ if PARTITIONERS.contains(&name) => {
            let device = on_device()?;
            let gpt = matches!(name, "sgdisk" | "gdisk");
            let wipes = args.iter().any(|arg| {
                TABLE_WIPES
                    .iter()
                    .any(|wipe| arg == wipe || arg.starts_with(&format!("{wipe}=")))
                    || (gpt && GPT_TABLE_WIPES.contains(&arg.as_str()))
            }) || (name == "parted"
                && args
                    .iter()
                    .any(|arg| PARTED_CHANGES.contains(&arg.as_str())));
            let lists = args
                .iter()
                .any(|arg| LISTING_OPTIONS.contains(&arg.as_str()) || arg == "print");
            (wipes || !lists).then(|| format!("rewrites the partition table of `{device}`"))
        }
        "dd" => args
            .iter()
            .filter_map(|arg| arg.strip_prefix("of="))
            .map(|target| cwd.resolve(target))
            .find(|target| is_unsafe_device(target))
            .map(|target| format!("writes raw data to the device `{target}`")),
        "cp" | "mv" | "install" | "rsync" | "ln" | "pv" => operands()
            .next_back()
            .filter(|target| is_unsafe_device(target))
            .map(|target| format!("writes to the device `{target}`")),
        "tee" if operands().any(|target| target == SYSRQ_TRIGGER) => Some(format!(
            "writes to `{SYSRQ_TRIGGER}`, which reboots or halts at once"
        )),
        "tee" | "shred" | "truncate" | "wipe" => operands()
            .find(|target| is_unsafe_device(target))
            .map(|target| format!("writes to the device `{target}`")),
        "cryptsetup"
            if args
                .iter()
                .any(|arg| CRYPTSETUP_WIPES.contains(&arg.as_str())) =>
        {
            Some("destroys the encrypted data of a device".to_owned())
        }
        "hdparm"
            if args.iter().any(|arg| {
                [
                    "--security-erase",
                    "--trim-sector",
                    "--write-sector",
                    "--make-bad-sector",
                ]
                .iter()
                .any(|option| arg.starts_with(option))
                    || arg.starts_with("--fwdownload")
                    || arg == "--dco-restore"
            }) =>
        {
            Some("erases or overwrites a disk".to_owned())
        }
        "nvme"
            if args.first().is_some_and(|subcommand| {
                matches!(subcommand.as_str(), "format" | "sanitize" | "delete-ns")
            }) =>
        {
            Some("erases an NVMe namespace".to_owned())
        }
        "mdadm" if args.iter().any(|arg| arg == "--zero-superblock") => {
            Some("erases RAID metadata".to_owned())
        }
        "pvremove" | "vgremove" | "lvremove" => Some("removes LVM volumes".to_owned()),
        "zpool"
            if args
                .first()
                .is_some_and(|sub| sub == "destroy" || sub == "labelclear") =>
        {
            Some("destroys a ZFS pool".to_owned())
        }
        "zfs" if args.first().is_some_and(|sub| sub == "destroy") => {
            Some("destroys a ZFS dataset".to_owned())
        }
        _ => None,
    }
}

/// `> /dev/sda` and friends: a redirection into a device that is not a safe one, or into
/// `/proc/sysrq-trigger`. `words` are the command's words with redirections.
pub(super) fn redirection_into_device(words: &[String], cwd: &Cwd) -> Option<String> {
    let mut words = words.iter();
    while let Some(word) = words.next() {
        if is_redirection(word) && word.contains('>') {
            let target = cwd.resolve(words.next()?);
            if target == SYSRQ_TRIGGER {
                return Some(format!(
                    "writes to `{SYSRQ_TRIGGER}`, which reboots or halts at once"
                ));
            }
            if is_unsafe_device(&target) {
                return Some(format!("writes to the device `{target}`"));
            }
        }
    }
    None
}

fn is_device_or_unknown(operand: &str) -> bool {
    is_unsafe_device(operand) || is_variable(operand)
}
