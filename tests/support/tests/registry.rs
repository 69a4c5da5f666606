//! The registry harness against the real registry: what `/v2/` answers with and without
//! authentication, and that a pushed blob's bytes are where `blob_path` says.

use std::process::Command;

use wasmcm_test_support::registry::Registry;

const BLOB: &str = "hello blob";
/// `printf 'hello blob' | sha256sum`; the registry checks it on upload.
const DIGEST: &str = "sha256:e997afd18e5f6be004fc193aed2c90291e68ab2c7599a62538c935b7fca6ab0f";

/// curl's stdout for `args` (curl is on every Debian machine; it keeps this test short).
fn curl(args: &[&str]) -> String {
    let out = Command::new("curl").arg("-sS").args(args).output().expect("curl runs");
    assert!(out.status.success(), "curl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// The status of `GET path`, as `user` (`USER:PASSWORD`) if given.
fn status(registry: &Registry, path: &str, user: Option<&str>) -> String {
    let url = format!("http://{}{path}", registry.address());
    let mut args = vec!["-o", "/dev/null", "-w", "%{http_code}", &url];
    args.extend(user.map(|user| ["-u", user]).into_iter().flatten());
    curl(&args)
}

/// Pushes [`BLOB`] to the repository `harness` the monolithic way (POST a session, PUT the bytes with their
/// digest), then checks that the registry stored them at `blob_path`.
fn push_blob(registry: &Registry, user: Option<&str>) {
    let auth: Vec<&str> = user.map(|user| ["-u", user]).into_iter().flatten().collect();
    let url = format!("http://{}/v2/harness/blobs/uploads/", registry.address());
    let headers = curl(&[&["-D", "-", "-o", "/dev/null", "-X", "POST", &url], &auth[..]].concat());
    let location = headers
        .lines()
        .find_map(|line| line.strip_prefix("Location: ").or_else(|| line.strip_prefix("location: ")))
        .unwrap_or_else(|| panic!("no Location in {headers}"))
        .trim();
    let put = format!("{location}&digest={DIGEST}");
    let args = ["-o", "/dev/null", "-w", "%{http_code}", "-X", "PUT", "--data-binary", BLOB, &put];
    let args = [&args[..], &["-H", "Content-Type: application/octet-stream"], &auth[..]].concat();
    assert_eq!(curl(&args), "201", "PUT {put}");
    let path = registry.blob_path(DIGEST);
    assert_eq!(std::fs::read_to_string(&path).expect("the blob is stored at blob_path"), BLOB, "{}", path.display());
}

#[test]
fn registry_without_auth_serves_and_stores_blobs() {
    let registry = Registry::start(false);
    assert_eq!(status(&registry, "/v2/", None), "200");
    push_blob(&registry, None);
}

#[test]
fn registry_with_auth_admits_only_its_user() {
    let registry = Registry::start(true);
    let user = format!("{}:{}", registry.username(), registry.password());
    assert_eq!(status(&registry, "/v2/", None), "401");
    assert_eq!(status(&registry, "/v2/", Some(&format!("{}:wrong", registry.username()))), "401");
    assert_eq!(status(&registry, "/v2/", Some(&user)), "200");
    push_blob(&registry, Some(&user));
}
