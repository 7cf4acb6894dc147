//! Explicit-value analysis with CEGAR (seed 000: Beyer & Löwe, "Explicit-Value Analysis Based
//! on CEGAR and Interpolation", §II-B and §III): the CPA `C` with merge-sep, stop-sep and the
//! precision operator `prec(v, π) = v|π` over per-location precisions. The CPA itself is the
//! value component of [`crate::analyses::combined::CombinedCpa`].

pub mod interpolation;
pub mod precision;
pub mod refiner;
pub mod state;
pub mod transfer;
