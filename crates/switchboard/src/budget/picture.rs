//! Images: decode (with limits), shrink to a maximum edge, re-encode.

use std::io::Cursor;

use base64::Engine as _;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use base64::engine::{DecodePaddingMode, general_purpose};
use image::codecs::jpeg::JpegEncoder;
use image::codecs::png::PngEncoder;
use image::imageops::FilterType;
use image::{ColorType, DynamicImage, ImageFormat, ImageReader};

/// Tokens an image costs when its size cannot be read: about a 1 100 × 1 100 picture.
pub(crate) const UNKNOWN_IMAGE_TOKENS: u64 = 1_600;

/// Pixels per token of an image.
const PIXELS_PER_TOKEN: u64 = 750;

/// Largest picture decoded at all; beyond, the image goes to a file.
const MAX_DIMENSION: u32 = 20_000;
const MAX_ALLOC: u64 = 256 * 1024 * 1024;

/// Base64 as servers send it: padding optional.
const LENIENT: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// Decodes base64, tolerating missing padding and line breaks.
pub(crate) fn decode_base64(data: &str) -> Result<Vec<u8>, base64::DecodeError> {
    match LENIENT.decode(data) {
        Ok(bytes) => Ok(bytes),
        Err(e) => {
            if data.bytes().any(|b| b.is_ascii_whitespace()) {
                let compact: Vec<u8> = data.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
                LENIENT.decode(compact)
            } else {
                Err(e)
            }
        }
    }
}

pub(crate) fn encode_base64(bytes: &[u8]) -> String {
    general_purpose::STANDARD.encode(bytes)
}

/// Tokens of an image from its pixel area (`width × height / 750`), read from the header of a
/// base64 prefix; [`UNKNOWN_IMAGE_TOKENS`] when the header cannot be read.
pub(crate) fn tokens_of_base64(data: &str) -> u64 {
    // 64 KiB of base64 is 48 KiB of bytes: enough for the headers of PNG, GIF, WebP and almost
    // every JPEG (the size comes after EXIF, which is usually smaller).
    let mut end = data.len().min(64 * 1024);
    end -= end % 4;
    let Some(prefix) = data.get(..end) else {
        return UNKNOWN_IMAGE_TOKENS;
    };
    let Ok(bytes) = LENIENT.decode(prefix) else {
        return UNKNOWN_IMAGE_TOKENS;
    };
    match ImageReader::new(Cursor::new(&bytes))
        .with_guessed_format()
        .ok()
        .map(ImageReader::into_dimensions)
    {
        Some(Ok((w, h))) => tokens_of_area(w, h),
        _ => UNKNOWN_IMAGE_TOKENS,
    }
}

pub(crate) fn tokens_of_area(width: u32, height: u32) -> u64 {
    (u64::from(width) * u64::from(height)).div_ceil(PIXELS_PER_TOKEN)
}

/// What became of one image.
#[derive(Debug)]
pub(crate) enum Shrunk {
    /// Within the maximum edge: the data stays as sent.
    Unchanged,
    /// Resized and re-encoded.
    Resized {
        data: String,
        mime: &'static str,
        from: (u32, u32),
        to: (u32, u32),
    },
    /// Not an image this build can decode (or over the decoding limits): the bytes go to a file.
    Undecodable {
        bytes: Vec<u8>,
        format: Option<ImageFormat>,
        reason: String,
    },
    /// Not even base64.
    NotBase64 { reason: String },
}

/// Decodes `data` (base64) and, when its longest edge is over `max_edge`, shrinks it keeping
/// the aspect ratio. PNG stays PNG, JPEG stays JPEG, anything else becomes PNG.
pub(crate) fn shrink(data: &str, max_edge: u32) -> Shrunk {
    let bytes = match decode_base64(data) {
        Ok(bytes) => bytes,
        Err(e) => {
            return Shrunk::NotBase64 {
                reason: e.to_string(),
            };
        }
    };
    let mut reader = match ImageReader::new(Cursor::new(&bytes)).with_guessed_format() {
        Ok(reader) => reader,
        Err(e) => return undecodable(bytes, None, e.to_string()),
    };
    let Some(format) = reader.format() else {
        return undecodable(bytes, None, "unknown image format".to_owned());
    };
    let mut limits = image::Limits::default();
    limits.max_image_width = Some(MAX_DIMENSION);
    limits.max_image_height = Some(MAX_DIMENSION);
    limits.max_alloc = Some(MAX_ALLOC);
    reader.limits(limits);
    let img = match reader.decode() {
        Ok(img) => img,
        Err(e) => return undecodable(bytes, Some(format), e.to_string()),
    };
    let (w, h) = (img.width(), img.height());
    let longest = w.max(h);
    let max_edge = max_edge.max(1);
    if longest <= max_edge {
        return Shrunk::Unchanged;
    }
    let scale = |v: u32| -> u32 {
        let scaled =
            (u64::from(v) * u64::from(max_edge) + u64::from(longest) / 2) / u64::from(longest);
        u32::try_from(scaled).unwrap_or(max_edge).clamp(1, max_edge)
    };
    let (nw, nh) = (scale(w), scale(h));
    // Area averaging is made for shrinking and much faster than a filtered resize, but aliases
    // when the sizes are close: there, a triangle filter.
    let small = if u64::from(longest) >= 2 * u64::from(max_edge) {
        img.thumbnail_exact(nw, nh)
    } else {
        img.resize_exact(nw, nh, FilterType::Triangle)
    };
    drop(img);
    let mut out = Vec::new();
    let (encoded, mime) = if format == ImageFormat::Jpeg {
        let small = match small.color() {
            ColorType::L8 | ColorType::Rgb8 => small,
            _ => DynamicImage::ImageRgb8(small.to_rgb8()),
        };
        (
            small.write_with_encoder(JpegEncoder::new_with_quality(&mut out, 85)),
            "image/jpeg",
        )
    } else {
        (
            small.write_with_encoder(PngEncoder::new(&mut out)),
            "image/png",
        )
    };
    match encoded {
        Ok(()) => Shrunk::Resized {
            data: encode_base64(&out),
            mime,
            from: (w, h),
            to: (nw, nh),
        },
        Err(e) => undecodable(bytes, Some(format), format!("cannot re-encode: {e}")),
    }
}

fn undecodable(bytes: Vec<u8>, format: Option<ImageFormat>, reason: String) -> Shrunk {
    Shrunk::Undecodable {
        bytes,
        format,
        reason,
    }
}

/// The MIME type of a format this build knows.
pub(crate) fn mime_of(format: ImageFormat) -> &'static str {
    format.to_mime_type()
}
