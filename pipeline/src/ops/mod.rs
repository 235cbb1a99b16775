//! What commands do beyond running a build's stages, as library functions the commands call
//! (`commands/` only parse arguments and print): making a workspace ([`init`]), planning a
//! month's manifest ([`month`]), refusing a damaged release
//! before a result names it ([`intact`]), running the model audit of a release through the
//! build's `generate` stage and the judge ([`model_audit`]). Exporting and verifying a
//! release are the release's ([`crate::release`]).

pub(crate) mod init;
pub(crate) mod intact;
pub(crate) mod model_audit;
pub(crate) mod month;
