//! Handlers of `project/trust`, `project/untrust` and `project/list`: the trust store reads the
//! project's pinned files and changes on a blocking thread (it resolves the root, reads and
//! hashes the files, writes the store).

use std::path::PathBuf;
use std::sync::Arc;

use jsonrpsee::types::ErrorObjectOwned;
use protocol::error::{self as codes, echo};
use protocol::project::*;

pub(super) mod review;

use super::{RpcResult, internal, rpc_error};
use crate::server::ConnectionContext;
use crate::state::DaemonState;
use agentd_policy::trust::TrustError;

/// The error a failed `project/trust` or `project/untrust` answers with.
fn trust_error(err: TrustError) -> ErrorObjectOwned {
    let code = match &err {
        TrustError::NotADirectory { .. }
        | TrustError::NotYours { .. }
        | TrustError::PseudoFilesystem { .. }
        | TrustError::ChangedSinceReview { .. }
        | TrustError::TooMany => codes::INVALID_PARAMS,
        TrustError::Save(_) => codes::INTERNAL_ERROR,
    };
    rpc_error(code, err.to_string())
}

pub async fn trust(
    state: Arc<DaemonState>,
    params: ProjectTrustParams,
    _connection: Arc<ConnectionContext>,
) -> RpcResult<ProjectTrustResult> {
    let path = absolute(&params.path)?;
    let expected: Option<Vec<(PathBuf, String)>> = params.files.map(|files| {
        files
            .into_iter()
            .map(|file| (PathBuf::from(file.path), file.digest))
            .collect()
    });
    let store = state.trust.clone();
    let dry_run = params.dry_run;
    let found = tokio::task::spawn_blocking(move || {
        if dry_run {
            store.review(&path)
        } else {
            store.trust(&path, expected.as_deref())
        }
    })
    .await
    .map_err(|err| internal(err.to_string()))?
    .map_err(trust_error)?;
    if !dry_run {
        tracing::info!(
            root = %found.root.display(),
            files = found.files.len(),
            "project trusted"
        );
    }
    let trusted = !dry_run || found.was_trusted;
    Ok(review::result(&found, trusted))
}

pub async fn untrust(
    state: Arc<DaemonState>,
    params: ProjectUntrustParams,
    _connection: Arc<ConnectionContext>,
) -> RpcResult<ProjectUntrustResult> {
    let path = absolute(&params.path)?;
    let store = state.trust.clone();
    let (root, was_trusted) = tokio::task::spawn_blocking(move || store.untrust(&path))
        .await
        .map_err(|err| internal(err.to_string()))?
        .map_err(trust_error)?;
    tracing::info!(root = %root.display(), was_trusted, "project untrusted");
    Ok(ProjectUntrustResult {
        root: root.display().to_string(),
        was_trusted,
    })
}

pub async fn list(
    state: Arc<DaemonState>,
    _params: ProjectListParams,
    _connection: Arc<ConnectionContext>,
) -> RpcResult<ProjectListResult> {
    Ok(ProjectListResult {
        projects: state
            .trust
            .list()
            .into_iter()
            .map(|root| TrustedProject {
                root: root.display().to_string(),
            })
            .collect(),
    })
}

/// The daemon's working directory means nothing to a client: paths must be absolute.
fn absolute(path: &str) -> Result<PathBuf, ErrorObjectOwned> {
    let path = PathBuf::from(path);
    if !path.is_absolute() {
        return Err(rpc_error(
            codes::INVALID_PARAMS,
            format!(
                "path {} is not absolute; send the project directory's absolute path",
                echo(&path.to_string_lossy())
            ),
        ));
    }
    Ok(path)
}
