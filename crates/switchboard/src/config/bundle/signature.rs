//! A bundle's signature (`mcpb sign`): a detached CMS `SignedData` (RFC 5652) over the zip's
//! bytes. Checked here: the `messageDigest` attribute against the content's digest, the
//! signature over the signed attributes with the certificate the signer info names, and that
//! certificate's chain to the system's trusted roots for code signing (rustls-webpki; roots
//! from `rustls-native-certs`, which honours `SSL_CERT_FILE`). No revocation check.
//!
//! The block is decoded with RustCrypto's `cms` (strict DER: definite, minimal lengths and no
//! trailing bytes). The signature is checked over the signed attributes *as they were sent*
//! (DER decoding sorts a SET OF, and `mcpb sign`'s node-forge writes them unsorted), so those
//! bytes, and each certificate's, are taken from the block with `der`'s reader, not re-encoded.

use cms::content_info::ContentInfo;
use cms::signed_data::{SignedData, SignerIdentifier};
use der::asn1::{ObjectIdentifier, OctetString};
use der::{
    AnyRef, Decode as _, Encode as _, Reader as _, SliceReader, Tag, TagNumber, Tagged as _,
};
use rustls::pki_types::{CertificateDer, UnixTime};
use x509_cert::Certificate;

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

const OID_SIGNED_DATA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.7.2");
const OID_DATA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.7.1");
const OID_CONTENT_TYPE: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.9.3");
const OID_MESSAGE_DIGEST: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.9.4");
const OID_SHA256: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.16.840.1.101.3.4.2.1");
const OID_SHA384: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.16.840.1.101.3.4.2.2");
const OID_SHA512: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.16.840.1.101.3.4.2.3");
/// id-kp-codeSigning (1.3.6.1.5.5.7.3.3), as DER contents.
const EKU_CODE_SIGNING: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x03];

/// The parts of a `SignedData` the check needs.
struct Signed {
    /// Each certificate as its DER bytes in the block, with its decoded form.
    certificates: Vec<(Vec<u8>, Certificate)>,
    digest_oid: ObjectIdentifier,
    sid: SignerIdentifier,
    /// The signed attributes as sent, tagged as a SET (what was signed), and the
    /// `messageDigest` they carry; `None`: the content itself was signed.
    signed_attrs: Option<(Vec<u8>, Vec<u8>)>,
    signature: Vec<u8>,
}

/// The elements of a constructed value, as they were sent.
fn elements(body: &[u8]) -> Result<Vec<AnyRef<'_>>, String> {
    let mut reader = SliceReader::new(body).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    while !reader.is_finished() {
        out.push(AnyRef::decode(&mut reader).map_err(|e| e.to_string())?);
    }
    Ok(out)
}

/// The certificates and the one signer's signed attributes of a `SignedData` as sent.
struct RawParts {
    certificates: Vec<Vec<u8>>,
    signed_attrs: Option<Vec<u8>>,
}

/// The raw parts of a `SignedData` whose structure `cms` has already checked.
fn raw_parts(der: &[u8]) -> Result<RawParts, String> {
    let context = |number: u32| Tag::ContextSpecific {
        constructed: true,
        number: TagNumber(number),
    };
    let info = AnyRef::from_der(der).map_err(|e| e.to_string())?;
    let content = elements(info.value())?
        .get(1)
        .copied()
        .ok_or("no content")?;
    let signed_data = AnyRef::from_der(content.value()).map_err(|e| e.to_string())?;
    let parts = elements(signed_data.value())?;
    let mut certificates = Vec::new();
    if let Some(set) = parts.iter().find(|p| p.tag() == context(0)) {
        for cert in elements(set.value())? {
            certificates.push(cert.to_der().map_err(|e| e.to_string())?);
        }
    }
    let signer_infos = parts.last().ok_or("no signer infos")?;
    let signer = elements(signer_infos.value())?
        .first()
        .copied()
        .ok_or("no signer info")?;
    let attrs = match elements(signer.value())?
        .into_iter()
        .find(|p| p.tag() == context(0))
    {
        Some(attrs) => {
            let mut bytes = attrs.to_der().map_err(|e| e.to_string())?;
            // `[0] IMPLICIT` on the wire; the signature is over the SET.
            bytes[0] = 0x31;
            Some(bytes)
        }
        None => None,
    };
    Ok(RawParts {
        certificates,
        signed_attrs: attrs,
    })
}

fn parse(der: &[u8]) -> Result<Signed, String> {
    let info = ContentInfo::from_der(der).map_err(|e| format!("not CMS: {e}"))?;
    if info.content_type != OID_SIGNED_DATA {
        return Err(format!(
            "its content is {}, not signed data",
            info.content_type
        ));
    }
    let data: SignedData = info
        .content
        .decode_as()
        .map_err(|e| format!("its signed data: {e}"))?;
    if data.encap_content_info.econtent.is_some() {
        return Err("it carries content of its own (not a detached signature)".to_owned());
    }
    let [signer] = data.signer_infos.0.as_slice() else {
        return Err(format!(
            "it has {} signers, not one",
            data.signer_infos.0.len()
        ));
    };
    let RawParts {
        certificates: raw_certs,
        signed_attrs: raw_attrs,
    } = raw_parts(der)?;
    // Each certificate's own bytes (the decoded set is sorted, and a re-encoding could differ
    // from what its issuer signed); a `[3]` other format is no certificate here.
    let certificates = raw_certs
        .into_iter()
        .filter_map(|raw| Certificate::from_der(&raw).ok().map(|cert| (raw, cert)))
        .collect();
    let signed_attrs = match (&signer.signed_attrs, raw_attrs) {
        (Some(attrs), Some(raw)) => {
            let mut digests = attrs.iter().filter(|a| a.oid == OID_MESSAGE_DIGEST);
            let (Some(digest), None) = (digests.next(), digests.next()) else {
                return Err("its signed attributes do not hold one message digest".to_owned());
            };
            let [value] = digest.values.as_slice() else {
                return Err("its message digest attribute holds more than one value".to_owned());
            };
            let digest: OctetString = value
                .decode_as()
                .map_err(|e| format!("its message digest: {e}"))?;
            if let Some(kind) = attrs.iter().find(|a| a.oid == OID_CONTENT_TYPE) {
                let is_data = matches!(kind.values.as_slice(), [v]
                    if v.decode_as::<ObjectIdentifier>().ok() == Some(OID_DATA));
                if !is_data {
                    return Err("its signed content type is not data".to_owned());
                }
            }
            Some((raw, digest.as_bytes().to_vec()))
        }
        (None, None) => None,
        _ => return Err("its signed attributes cannot be read".to_owned()),
    };
    Ok(Signed {
        certificates,
        digest_oid: signer.digest_alg.oid,
        sid: signer.sid.clone(),
        signed_attrs,
        signature: signer.signature.as_bytes().to_vec(),
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

/// What a signature may cover: the archive, in one or more forms (see `archive.rs`), read
/// each time it is needed rather than held in memory.
pub(crate) trait Content {
    /// How many forms there are; the first that matches the signature is the one checked.
    fn forms(&self) -> usize;
    /// How many bytes a form has.
    fn len(&self) -> u64;
    /// Gives `form`'s bytes to `sink`, in order.
    fn feed(&mut self, form: usize, sink: &mut dyn FnMut(&[u8])) -> std::io::Result<()>;
}

/// Content in memory (tests, and the fuzz target): each slice is a form.
impl Content for &[&[u8]] {
    fn forms(&self) -> usize {
        <[&[u8]]>::len(self)
    }

    fn len(&self) -> u64 {
        self.first().map_or(0, |form| form.len() as u64)
    }

    fn feed(&mut self, form: usize, sink: &mut dyn FnMut(&[u8])) -> std::io::Result<()> {
        if let Some(bytes) = self.get(form) {
            sink(bytes);
        }
        Ok(())
    }
}

/// The most content signed without signed attributes may be: its signature is over the
/// content itself, which is then held in memory to check it (`mcpb sign` always signs
/// attributes).
const MAX_UNATTRIBUTED: u64 = 64 << 20;

/// The digest of `form` of `content` with `D`.
fn hash<D: sha2::Digest>(content: &mut dyn Content, form: usize) -> std::io::Result<Vec<u8>> {
    let mut digest = D::new();
    content.feed(form, &mut |bytes| digest.update(bytes))?;
    Ok(digest.finalize().to_vec())
}

/// The content's digest with the algorithm named, and the signature algorithms to try
/// (`Ok(None)`: an algorithm not accepted).
fn digest(
    oid: ObjectIdentifier,
    content: &mut dyn Content,
    form: usize,
) -> std::io::Result<Option<(Vec<u8>, Algorithms)>> {
    Ok(Some(match oid {
        OID_SHA256 => (hash::<sha2::Sha256>(content, form)?, SHA256_ALGS),
        OID_SHA384 => (hash::<sha2::Sha384>(content, form)?, SHA384_ALGS),
        OID_SHA512 => (hash::<sha2::Sha512>(content, form)?, SHA512_ALGS),
        _ => return Ok(None),
    }))
}

/// Whether `cert` is the one `sid` names.
fn names(sid: &SignerIdentifier, cert: &Certificate) -> bool {
    let tbs = cert.tbs_certificate();
    match sid {
        SignerIdentifier::IssuerAndSerialNumber(id) => {
            id.issuer == *tbs.issuer() && id.serial_number == *tbs.serial_number()
        }
        SignerIdentifier::SubjectKeyIdentifier(ski) => tbs
            .get_extension::<x509_cert::ext::pkix::SubjectKeyIdentifier>()
            .ok()
            .flatten()
            .is_some_and(|(_, own)| own == *ski),
    }
}

/// The certificate's subject for people: its common name, else its organisation.
fn subject_name(cert: &Certificate) -> Option<String> {
    let subject = cert.tbs_certificate().subject();
    let name = match subject.common_name() {
        Ok(Some(cn)) => Some(cn),
        _ => subject.organization().ok().flatten(),
    };
    name.map(|n| n.value().into_owned())
}

/// What the signature of `content` has to say: the signed attributes when their digest is
/// that of one of its forms, else (no attributes) its first form itself.
fn what_was_signed(
    signed: &Signed,
    content: &mut dyn Content,
) -> Result<Option<(Vec<u8>, Algorithms)>, String> {
    let unreadable = |e: std::io::Error| format!("the archive cannot be read: {e}");
    for form in 0..content.forms() {
        let Some((digest, algorithms)) =
            digest(signed.digest_oid, content, form).map_err(unreadable)?
        else {
            return Err("its digest algorithm is not SHA-256, SHA-384 nor SHA-512".to_owned());
        };
        match &signed.signed_attrs {
            Some((attrs, named)) => {
                if *named == digest {
                    return Ok(Some((attrs.clone(), algorithms)));
                }
            }
            None => {
                if content.len() > MAX_UNATTRIBUTED {
                    return Err(format!(
                        "it signs the archive without signed attributes, which Switchboard \
                         checks only for bundles up to {} MiB",
                        MAX_UNATTRIBUTED >> 20
                    ));
                }
                let mut bytes = Vec::new();
                content
                    .feed(form, &mut |b| bytes.extend_from_slice(b))
                    .map_err(unreadable)?;
                return Ok(Some((bytes, algorithms)));
            }
        }
    }
    Ok(None)
}

/// Checks `pkcs7` as a detached signature of one of `content`'s forms (the same archive, its
/// end record's comment length as written and as it reads alone; see `archive.rs`).
pub(crate) fn verify(content: &mut dyn Content, pkcs7: &[u8]) -> Verdict {
    let invalid = |why: String| Verdict::Invalid { why };
    let signed = match parse(pkcs7) {
        Ok(signed) => signed,
        Err(why) => {
            return invalid(format!(
                "the signature block is not a CMS signature Switchboard can read ({why})"
            ));
        }
    };
    let (message, algorithms) = match what_was_signed(&signed, content) {
        Ok(Some(matched)) => matched,
        Ok(None) => return invalid("the archive does not match what was signed".to_owned()),
        Err(why) => return invalid(why),
    };
    let Some(index) = signed
        .certificates
        .iter()
        .position(|(_, cert)| names(&signed.sid, cert))
    else {
        return invalid("it does not carry the certificate of its signer".to_owned());
    };
    let der = CertificateDer::from(signed.certificates[index].0.as_slice());
    let verified = webpki::EndEntityCert::try_from(&der).is_ok_and(|cert| {
        algorithms.iter().any(|alg| {
            cert.verify_signature(*alg, &message, &signed.signature)
                .is_ok()
        })
    });
    if !verified {
        return invalid("its signer's certificate did not make this signature".to_owned());
    }
    let name = subject_name(&signed.certificates[index].1)
        .unwrap_or_else(|| "an unnamed certificate".to_owned());
    let intermediates: Vec<CertificateDer<'_>> = signed
        .certificates
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != index)
        .map(|(_, (raw, _))| CertificateDer::from(raw.as_slice()))
        .collect();
    match chain(&der, &intermediates) {
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
    use proptest::prelude::*;

    /// What `block` says of the content `zip`.
    fn of_zip(block: &[u8]) -> Verdict {
        let mut forms: &[&[u8]] = &[b"zip"];
        verify(&mut forms, block)
    }

    #[test]
    fn what_is_not_a_signature_is_invalid() {
        for block in [
            &b"\x30\x03\x02\x01\x01"[..],
            b"",
            b"\x30\x84\xff\xff\xff\xff",
            // A SEQUENCE, then a byte after it.
            b"\x30\x00\x00",
        ] {
            assert!(
                matches!(of_zip(block), Verdict::Invalid { .. }),
                "{block:?}"
            );
        }
    }

    proptest! {
        // The block comes from the bundle's author: no input makes the reader panic, and
        // nothing but a real signature is ever more than invalid.
        #[test]
        fn any_bytes_are_at_worst_invalid(block in proptest::collection::vec(any::<u8>(), 0..600)) {
            let verdict = of_zip(&block);
            prop_assert!(matches!(verdict, Verdict::Invalid { .. }), "{:?}", verdict);
        }

        // DER-shaped input (a SEQUENCE holding the signed-data OID and random TLVs) reaches
        // the deeper parts of the reader.
        #[test]
        fn der_shaped_bytes_are_at_worst_invalid(
            inner in proptest::collection::vec(any::<u8>(), 0..300),
        ) {
            let oid = [0x06u8, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x07, 0x02];
            let mut content = vec![0xa0u8];
            push_len(&mut content, inner.len());
            content.extend_from_slice(&inner);
            let mut body = oid.to_vec();
            body.extend_from_slice(&content);
            let mut block = vec![0x30u8];
            push_len(&mut block, body.len());
            block.extend_from_slice(&body);
            let verdict = of_zip(&block);
            prop_assert!(matches!(verdict, Verdict::Invalid { .. }), "{:?}", verdict);
        }
    }

    fn push_len(out: &mut Vec<u8>, len: usize) {
        if len < 0x80 {
            out.push(len as u8);
        } else if len < 0x100 {
            out.extend_from_slice(&[0x81, len as u8]);
        } else {
            out.extend_from_slice(&[0x82, (len >> 8) as u8, len as u8]);
        }
    }
}
