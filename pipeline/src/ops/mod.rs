//! What commands do beyond running a build's stages, as library functions the commands call
//! (`commands/` only parse arguments and print): making a workspace ([`init`]), planning a
//! month's manifest ([`month`]),
//! writing releases in the published dataset's layout ([`export`]),
//! verifying a published release by rebuilding it ([`verify`]), refusing a damaged release
//! before a result names it ([`intact`]), running the model audit of a release through the
//! build's `generate` stage and the judge ([`model_audit`]).

pub mod export;
pub mod init;
pub mod intact;
pub mod model_audit;
pub mod month;
pub mod verify;
