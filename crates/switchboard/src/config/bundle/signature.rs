//! A bundle's signature (`mcpb sign`): a detached PKCS#7 / CMS `SignedData` over the zip's
//! bytes. Checked here: the `messageDigest` attribute against the content's digest, the
//! signature over the signed attributes with one of the certificates it carries, and that
//! certificate's chain to the system's trusted roots for code signing (rustls-webpki; roots
//! from `rustls-native-certs`, which honours `SSL_CERT_FILE`). No revocation check.
//!
//! The DER is read by hand (a few nested TLVs): definite lengths only, as DER is.

use rustls::pki_types::{CertificateDer, UnixTime};
use sha2::Digest as _;

/// What the signature says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Valid, by a certificate that chains to a trusted root.
    Trusted { signer: String },
    /// Valid for the certificate it carries, which does not chain to a trusted root.
    Untrusted { signer: String, why: String },
    /// Not a valid signature of this content.
    Invalid { why: String },
}

const OID_SIGNED_DATA: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x07, 0x02];
const OID_MESSAGE_DIGEST: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x09, 0x04];
const OID_SHA256: &[u8] = &[0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01];
const OID_SHA384: &[u8] = &[0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x02];
const OID_SHA512: &[u8] = &[0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x03];
const OID_COMMON_NAME: &[u8] = &[0x55, 0x04, 0x03];
const OID_ORGANIZATION: &[u8] = &[0x55, 0x04, 0x0a];
/// id-kp-codeSigning (1.3.6.1.5.5.7.3.3).
const EKU_CODE_SIGNING: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x03];

const SEQUENCE: u8 = 0x30;
const SET: u8 = 0x31;
const OID: u8 = 0x06;
const OCTET_STRING: u8 = 0x04;
const CONTEXT_0: u8 = 0xa0;
const CONTEXT_1: u8 = 0xa1;

/// One TLV: its tag, its contents, and all of its bytes.
#[derive(Clone, Copy)]
struct Tlv<'a> {
    tag: u8,
    body: &'a [u8],
    whole: &'a [u8],
}

fn read<'a>(input: &mut &'a [u8]) -> Option<Tlv<'a>> {
    let start = *input;
    let (&tag, rest) = start.split_first()?;
    let (&first, mut rest) = rest.split_first()?;
    let len = if first < 0x80 {
        usize::from(first)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 {
            return None;
        }
        let (bytes, after) = rest.split_at_checked(n)?;
        rest = after;
        bytes
            .iter()
            .fold(0usize, |acc, b| acc << 8 | usize::from(*b))
    };
    let (body, after) = rest.split_at_checked(len)?;
    let whole = &start[..start.len() - after.len()];
    *input = after;
    Some(Tlv { tag, body, whole })
}

/// The TLVs inside `body`.
fn children(body: &[u8]) -> Option<Vec<Tlv<'_>>> {
    let mut input = body;
    let mut out = Vec::new();
    while !input.is_empty() {
        out.push(read(&mut input)?);
    }
    Some(out)
}

/// The parts of a `SignedData` the check needs.
struct Signed<'a> {
    certificates: Vec<&'a [u8]>,
    digest_oid: &'a [u8],
    /// The `[0]` signed attributes, whole (their tag becomes SET for the signature).
    signed_attrs: Option<Tlv<'a>>,
    signature: &'a [u8],
}

fn parse(der: &[u8]) -> Option<Signed<'_>> {
    let mut input = der;
    let info = read(&mut input).filter(|i| i.tag == SEQUENCE)?;
    let [oid, content] = children(info.body)?[..] else {
        return None;
    };
    if oid.tag != OID || oid.body != OID_SIGNED_DATA || content.tag != CONTEXT_0 {
        return None;
    }
    let signed_data = children(content.body)?.into_iter().next()?;
    let parts = children(signed_data.body)?;
    let mut certificates = Vec::new();
    let mut signer_infos = None;
    for part in parts.iter().skip(3) {
        match part.tag {
            CONTEXT_0 => certificates = children(part.body)?.iter().map(|c| c.whole).collect(),
            CONTEXT_1 => {}
            SET => signer_infos = Some(*part),
            _ => return None,
        }
    }
    let signer = children(signer_infos?.body)?.into_iter().next()?;
    let fields = children(signer.body)?;
    // version, sid, digestAlgorithm, [0] signedAttrs?, signatureAlgorithm, signature, ...
    let digest_oid = children(fields.get(2)?.body)?.first()?.body;
    let (signed_attrs, rest) = match fields.get(3) {
        Some(attrs) if attrs.tag == CONTEXT_0 => (Some(*attrs), fields.get(4..)?),
        _ => (None, fields.get(3..)?),
    };
    let signature = rest.get(1).filter(|s| s.tag == OCTET_STRING)?.body;
    Some(Signed {
        certificates,
        digest_oid,
        signed_attrs,
        signature,
    })
}

/// Signature algorithms to try, by digest.
type Algorithms = &'static [&'static dyn rustls::pki_types::SignatureVerificationAlgorithm];

static SHA256_ALGS: Algorithms = &[
    webpki::ring::RSA_PKCS1_2048_8192_SHA256,
    webpki::ring::ECDSA_P256_SHA256,
    webpki::ring::ECDSA_P384_SHA256,
];
static SHA384_ALGS: Algorithms = &[
    webpki::ring::RSA_PKCS1_2048_8192_SHA384,
    webpki::ring::ECDSA_P384_SHA384,
    webpki::ring::ECDSA_P256_SHA384,
];
static SHA512_ALGS: Algorithms = &[webpki::ring::RSA_PKCS1_2048_8192_SHA512];

/// The content's digest with the algorithm named, and the signature algorithms to try.
fn digest(oid: &[u8], content: &[u8]) -> Option<(Vec<u8>, Algorithms)> {
    Some(match oid {
        OID_SHA256 => (sha2::Sha256::digest(content).to_vec(), SHA256_ALGS),
        OID_SHA384 => (sha2::Sha384::digest(content).to_vec(), SHA384_ALGS),
        OID_SHA512 => (sha2::Sha512::digest(content).to_vec(), SHA512_ALGS),
        _ => return None,
    })
}

/// The `messageDigest` attribute's value.
fn message_digest<'a>(attrs: &Tlv<'a>) -> Option<&'a [u8]> {
    children(attrs.body)?.into_iter().find_map(|attr| {
        let parts = children(attr.body)?;
        let (oid, values) = (parts.first()?, parts.get(1)?);
        (oid.body == OID_MESSAGE_DIGEST)
            .then(|| children(values.body)?.first().map(|v| v.body))
            .flatten()
    })
}

/// The certificate's subject for people: its common name, else its organisation.
fn subject_name(cert: &[u8]) -> Option<String> {
    let mut input = cert;
    let cert = read(&mut input)?;
    let tbs = children(cert.body)?.into_iter().next()?;
    let fields = children(tbs.body)?;
    // [0] version?, serial, signature, issuer, validity, subject
    let skip = usize::from(fields.first()?.tag == CONTEXT_0);
    let subject = fields.get(skip + 4)?;
    let mut by_oid = Vec::new();
    for set in children(subject.body)? {
        for pair in children(set.body)? {
            let parts = children(pair.body)?;
            by_oid.push((parts.first()?.body, parts.get(1)?.body));
        }
    }
    [OID_COMMON_NAME, OID_ORGANIZATION].iter().find_map(|want| {
        by_oid
            .iter()
            .find(|(oid, _)| oid == want)
            .map(|(_, value)| String::from_utf8_lossy(value).into_owned())
    })
}

/// Checks `pkcs7` as a detached signature of `content`.
pub(crate) fn verify(content: &[u8], pkcs7: &[u8]) -> Verdict {
    let invalid = |why: &str| Verdict::Invalid {
        why: why.to_owned(),
    };
    let Some(signed) = parse(pkcs7) else {
        return invalid("the signature block is not a PKCS#7 signature Switchboard can read");
    };
    let Some((digest, algorithms)) = digest(signed.digest_oid, content) else {
        return invalid("its digest algorithm is not SHA-256, SHA-384 nor SHA-512");
    };
    // What was signed: the attributes (as a SET), which name the content's digest; else the
    // content itself.
    let attrs_as_set;
    let message: &[u8] = match &signed.signed_attrs {
        Some(attrs) => {
            if message_digest(attrs) != Some(digest.as_slice()) {
                return invalid("the archive does not match what was signed");
            }
            let mut bytes = attrs.whole.to_vec();
            bytes[0] = SET;
            attrs_as_set = bytes;
            &attrs_as_set
        }
        None => content,
    };
    let certs: Vec<CertificateDer<'_>> = signed
        .certificates
        .iter()
        .map(|c| CertificateDer::from(*c))
        .collect();
    let signer = certs.iter().enumerate().find_map(|(i, der)| {
        let cert = webpki::EndEntityCert::try_from(der).ok()?;
        algorithms
            .iter()
            .any(|alg| {
                cert.verify_signature(*alg, message, signed.signature)
                    .is_ok()
            })
            .then_some(i)
    });
    let Some(index) = signer else {
        return invalid("no certificate it carries made this signature");
    };
    let name = subject_name(&certs[index]).unwrap_or_else(|| "an unnamed certificate".to_owned());
    let intermediates: Vec<CertificateDer<'_>> = certs
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != index)
        .map(|(_, c)| c.clone())
        .collect();
    match chain(&certs[index], &intermediates) {
        Ok(()) => Verdict::Trusted { signer: name },
        Err(why) => Verdict::Untrusted { signer: name, why },
    }
}

/// Whether `cert` chains to a trusted root for code signing; why not otherwise.
fn chain(cert: &CertificateDer<'_>, intermediates: &[CertificateDer<'_>]) -> Result<(), String> {
    let roots = rustls_native_certs::load_native_certs().certs;
    let anchors: Vec<_> = roots
        .iter()
        .filter_map(|r| webpki::anchor_from_trusted_cert(r).ok())
        .collect();
    if anchors.is_empty() {
        return Err("no trusted root certificates were found on this system".to_owned());
    }
    let cert = webpki::EndEntityCert::try_from(cert).map_err(|e| format!("{e}"))?;
    cert.verify_for_usage(
        webpki::ALL_VERIFICATION_ALGS,
        &anchors,
        intermediates,
        UnixTime::now(),
        webpki::KeyUsage::required(EKU_CODE_SIGNING),
        None,
        None,
    )
    .map(|_| ())
    .map_err(|e| match e {
        webpki::Error::UnknownIssuer => {
            "its certificate is not issued by a trusted root (self-signed, or an unknown issuer)"
                .to_owned()
        }
        webpki::Error::CertExpired { .. } => "its certificate has expired".to_owned(),
        webpki::Error::CertNotValidYet { .. } => "its certificate is not valid yet".to_owned(),
        webpki::Error::RequiredEkuNotFoundContext(_) => {
            "its certificate is not for code signing".to_owned()
        }
        other => format!("its certificate: {other}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_not_a_signature_is_invalid() {
        assert!(matches!(
            verify(b"zip", b"\x30\x03\x02\x01\x01"),
            Verdict::Invalid { .. }
        ));
        assert!(matches!(verify(b"zip", b""), Verdict::Invalid { .. }));
        assert!(matches!(
            verify(b"zip", b"\x30\x84\xff\xff\xff\xff"),
            Verdict::Invalid { .. }
        ));
    }
}
