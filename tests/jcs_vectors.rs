//! RFC 8785 reference pairs (`tests/vectors/jcs`, cyberphone/json-canonicalization).

use conduct_walker::jcs;
use std::path::PathBuf;

fn vectors() -> PathBuf {
    conduct_walker::sandbox::test_vectors("jcs")
}

#[test]
fn every_reference_pair_reproduces_byte_for_byte() {
    let mut checked = 0;
    for entry in std::fs::read_dir(vectors().join("input")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_owned();
        let input = std::fs::read(&path).unwrap();
        let expected = std::fs::read(vectors().join("output").join(&name)).unwrap();
        let got = jcs::canonicalize_bytes(&input).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(&expected),
            "{name:?}"
        );
        checked += 1;
    }
    assert_eq!(checked, 6);
}
