//! Signed Agent Cards (A2A §8.4): reading the header, and (issue 4) verifying it.
