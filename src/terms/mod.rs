//! A2A Terms extension: standing proposals verified by digest and signature.
