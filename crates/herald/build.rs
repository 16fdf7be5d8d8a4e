//! Names the commit the binary is built from, for `herald version` and
//! `--version`: `HERALD_COMMIT` when set (an image built without `.git`),
//! else `git rev-parse` of the repository this crate is in, else `unknown`
//! (a tarball, or no git). Also lists the Cargo features built in.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!s.is_empty()).then_some(s)
}

/// Whether git's repository is this workspace's own: a tarball unpacked
/// inside some other checkout must not take that checkout's commit.
fn in_own_repository() -> bool {
    let Some(top) = git(&["rev-parse", "--show-toplevel"]) else {
        return false;
    };
    let manifest = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    let workspace = std::path::Path::new(&manifest).join("../..");
    match (std::fs::canonicalize(top), std::fs::canonicalize(workspace)) {
        (Ok(top), Ok(workspace)) => top == workspace,
        _ => false,
    }
}

/// `bench-pg, ...` from Cargo's `CARGO_FEATURE_*` variables, or `none`.
fn features() -> String {
    let mut names: Vec<String> = std::env::vars()
        .filter_map(|(k, _)| {
            k.strip_prefix("CARGO_FEATURE_")
                .map(|f| f.to_ascii_lowercase().replace('_', "-"))
        })
        .collect();
    names.sort();
    if names.is_empty() {
        "none".to_string()
    } else {
        names.join(", ")
    }
}

fn main() {
    println!("cargo:rerun-if-env-changed=HERALD_COMMIT");
    println!("cargo:rustc-env=HERALD_FEATURES={}", features());
    let own = in_own_repository();
    // A new commit or checkout changes HEAD or the branch it names.
    if let Some(dir) = git(&["rev-parse", "--git-dir"]).filter(|_| own) {
        println!("cargo:rerun-if-changed={dir}/HEAD");
        println!("cargo:rerun-if-changed={dir}/packed-refs");
        if let Some(head) = git(&["symbolic-ref", "-q", "HEAD"]) {
            let common = git(&["rev-parse", "--git-common-dir"]).unwrap_or(dir);
            println!("cargo:rerun-if-changed={common}/{head}");
        }
    }
    let commit = std::env::var("HERALD_COMMIT")
        .ok()
        .filter(|c| !c.is_empty())
        .or_else(|| {
            own.then(|| git(&["rev-parse", "--short=12", "HEAD"]))
                .flatten()
        })
        .unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=HERALD_COMMIT={commit}");
}
