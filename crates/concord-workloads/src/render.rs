//! `render`: a small ray tracer in which every vector is a heap object, standing for DaCapo
//! `sunflow` (scalable; many tiny short-lived objects).
//!
//! The scene, built once per mutator and long-lived, is a checkered ground plane, eight spheres
//! (some reflective) and two point lights, all heap objects whose positions and colors are
//! [`VEC`] objects. The image is `N x N` pixels (`--size N`, [`SIZE`], default 200); row `y`
//! is rendered by mutator `y % mutators`. Each pixel averages 2 x 2 samples; a sample traces a
//! ray from the eye with Phong shading (ambient, diffuse, specular with exponent 32), shadow
//! rays to both lights, and reflections up to [`MAX_DEPTH`] bounces.
//!
//! Every vector operation (add, subtract, scale, component product, normalize) allocates a new
//! [`VEC`] (`ObjectType::fixed(0, 24)`: three `f64`, 32 bytes with the header), so a sample
//! allocates dozens of them, nearly all dead when it finishes. The tracer is written once,
//! generic over where vectors live; scopes are opened per pixel, per sample and per traced ray,
//! so a ray's temporaries are released when it returns its color.
//!
//! A pixel's color is quantized to 8 bits per channel, `rgb = r | g << 8 | b << 16`, and the
//! checksum is the wrapping sum over pixels of `rgb * (1 + y * N + x)`: integers computed per
//! pixel, so the sum does not depend on how rows are split across mutators. The same tracer run
//! on plain `[f64; 3]` values gives [`expected_checksum`] (the same floating-point operations in
//! the same order, so the same bits); `run` computes it before attaching any mutator, except at
//! the default size, whose value is stored ([`DEFAULT_EXPECTED`], checked by a unit test).
//!
//! # Heap size
//!
//! Live data: the scene (under 2 KiB per mutator) and the vectors of the rays being traced,
//! at most a few KiB. At the default size (`N` = 200, 285 000 rays) the run allocates about
//! 0.26 GiB, 8.7 million vectors. The measured smallest heap that completes is the smallest a
//! configuration allows, 4 MiB (optimized preset, 2 GC threads, release build), with 1 and
//! with 4 mutators.
//! [`Render`]'s default heap is three times that, 12 MiB, for any number of mutators.

use std::sync::atomic::{AtomicU64, Ordering};

use concord::{Gc, GcError, Handle, Heap, Mutator, ObjectType};

use crate::scaffold::{self, detail, view, Size, SizedWorkload};
use crate::{run_copies, WorkloadError, WorkloadParams, WorkloadResult, MIB};

/// The name [`crate::lookup`] knows this workload by.
pub const NAME: &str = "render";

/// `--size`: the image side in pixels, 200 by default, 4 to 4096. The default heap is three
/// times the measured smallest heap, 4 MiB, for any size and number of mutators (see the
/// module documentation).
pub const SIZE: Size =
    Size::named("render image side (size)", 200, 4..=4096, "").measured_heap(4 * MIB, 0);

/// Reflection bounces after the primary ray.
pub const MAX_DEPTH: u32 = 2;

/// [`expected_checksum`] of the default size, stored so that default runs do not spend time
/// on the reference (a unit test recomputes it).
pub const DEFAULT_EXPECTED: u64 = 7_505_324_744_844_910;

/// A vector: payload `x`, `y`, `z` as `f64`.
pub const VEC: ObjectType = ObjectType::fixed(0, 24);
/// The scene root: `shapes`, `lights` (reference arrays).
pub const SCENE: ObjectType = ObjectType::fixed(2, 0);
/// A shape: `pos` (sphere center or plane normal), `color` ([`VEC`]s); payload `kind: u64`
/// (0 sphere, 1 plane), `radius` (or plane offset), `reflect`, `diffuse` as `f64`.
pub const SHAPE: ObjectType = ObjectType::fixed(2, 32);
/// A point light: `pos`, `color` ([`VEC`]s).
pub const LIGHT: ObjectType = ObjectType::fixed(2, 0);

// Scene slots.
const SHAPES: usize = 0;
const LIGHTS: usize = 1;
// Shape and light slots and shape payload offsets.
const POS: usize = 0;
const COLOR: usize = 1;
const S_KIND: usize = 0;
const S_RADIUS: usize = 8;
const S_REFLECT: usize = 16;
const S_DIFFUSE: usize = 24;

/// Smallest ray parameter counted as a hit, and the offset of secondary ray origins.
const EPS: f64 = 1e-6;
/// Ambient light share.
const AMBIENT: f64 = 0.1;
/// Specular strength.
const SPECULAR: f64 = 0.5;
/// The eye.
const EYE: [f64; 3] = [0.0, 1.2, -4.0];
/// Distance from the eye to the image plane (the image plane spans -1..1 both ways).
const FOCAL: f64 = 1.6;
/// Sub-pixel sample offsets.
const SAMPLES: [(f64, f64); 4] = [(0.25, 0.25), (0.75, 0.25), (0.25, 0.75), (0.75, 0.75)];

/// A shape of the scene as constants.
struct ShapeDef {
    sphere: bool,
    pos: [f64; 3],
    color: [f64; 3],
    radius: f64,
    reflect: f64,
    diffuse: f64,
}

const fn sphere(pos: [f64; 3], radius: f64, color: [f64; 3], reflect: f64) -> ShapeDef {
    ShapeDef {
        sphere: true,
        pos,
        color,
        radius,
        reflect,
        diffuse: 0.8,
    }
}

/// The scene: a ground plane `y = 0` and eight spheres.
const SHAPE_DEFS: [ShapeDef; 9] = [
    ShapeDef {
        sphere: false,
        pos: [0.0, 1.0, 0.0],
        color: [0.9, 0.9, 0.85],
        radius: 0.0,
        reflect: 0.15,
        diffuse: 0.9,
    },
    sphere([0.0, 1.0, 1.5], 1.0, [0.9, 0.2, 0.2], 0.4),
    sphere([-2.1, 0.7, 2.2], 0.7, [0.2, 0.8, 0.3], 0.1),
    sphere([2.0, 0.8, 2.5], 0.8, [0.2, 0.3, 0.9], 0.6),
    sphere([-0.9, 0.35, 0.1], 0.35, [0.9, 0.8, 0.1], 0.0),
    sphere([1.0, 0.3, 0.0], 0.3, [0.8, 0.3, 0.8], 0.2),
    sphere([0.3, 2.6, 3.5], 0.6, [0.9, 0.9, 0.9], 0.8),
    sphere([-3.0, 1.5, 5.0], 1.5, [0.5, 0.7, 0.9], 0.3),
    sphere([3.2, 0.5, 0.8], 0.5, [0.95, 0.5, 0.2], 0.0),
];

/// The lights: position, color.
const LIGHT_DEFS: [([f64; 3], [f64; 3]); 2] = [
    ([-4.0, 6.0, -3.0], [0.8, 0.8, 0.75]),
    ([5.0, 4.0, -1.0], [0.35, 0.35, 0.45]),
];

// ---- vectors, wherever they live ----

/// Where vectors live: heap objects ([`Mutator`], `V` = [`Handle`]) or plain values
/// ([`Plain`], `V = [f64; 3]`). Every operation that yields a vector makes a new one.
trait Vectors: Sized {
    type V: Copy;

    /// A new vector.
    fn vec(&mut self, x: f64, y: f64, z: f64) -> Result<Self::V, GcError>;

    /// The components of `v`.
    fn xyz(&self, v: Self::V) -> [f64; 3];

    /// Runs `f` in a scope whose vectors die with it, except the one it returns.
    fn keep(
        &mut self,
        f: impl FnOnce(&mut Self) -> Result<Self::V, WorkloadError>,
    ) -> Result<Self::V, WorkloadError>;

    /// Runs `f` in a scope whose vectors all die with it.
    fn within<R>(
        &mut self,
        f: impl FnOnce(&mut Self) -> Result<R, WorkloadError>,
    ) -> Result<R, WorkloadError>;

    fn add(&mut self, a: Self::V, b: Self::V) -> Result<Self::V, GcError> {
        let (a, b) = (self.xyz(a), self.xyz(b));
        self.vec(a[0] + b[0], a[1] + b[1], a[2] + b[2])
    }

    fn sub(&mut self, a: Self::V, b: Self::V) -> Result<Self::V, GcError> {
        let (a, b) = (self.xyz(a), self.xyz(b));
        self.vec(a[0] - b[0], a[1] - b[1], a[2] - b[2])
    }

    /// Component-wise product.
    fn mul(&mut self, a: Self::V, b: Self::V) -> Result<Self::V, GcError> {
        let (a, b) = (self.xyz(a), self.xyz(b));
        self.vec(a[0] * b[0], a[1] * b[1], a[2] * b[2])
    }

    fn scale(&mut self, a: Self::V, s: f64) -> Result<Self::V, GcError> {
        let a = self.xyz(a);
        self.vec(a[0] * s, a[1] * s, a[2] * s)
    }

    fn dot(&self, a: Self::V, b: Self::V) -> f64 {
        let (a, b) = (self.xyz(a), self.xyz(b));
        a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
    }

    fn length(&self, a: Self::V) -> f64 {
        self.dot(a, a).sqrt()
    }

    fn normalize(&mut self, a: Self::V) -> Result<Self::V, GcError> {
        let len = self.length(a);
        self.scale(a, 1.0 / len)
    }
}

impl Vectors for Mutator<'_> {
    type V = Handle;

    fn vec(&mut self, x: f64, y: f64, z: f64) -> Result<Handle, GcError> {
        let v = self.alloc(VEC)?;
        // One handle check for the three components (as `write_f64` stores them).
        let payload = self.payload_mut(v);
        for (field, c) in payload.chunks_exact_mut(8).zip([x, y, z]) {
            field.copy_from_slice(&c.to_bits().to_le_bytes());
        }
        Ok(v)
    }

    fn xyz(&self, v: Handle) -> [f64; 3] {
        let v = view(self, v);
        [v.read_f64(0), v.read_f64(8), v.read_f64(16)]
    }

    fn keep(
        &mut self,
        f: impl FnOnce(&mut Self) -> Result<Handle, WorkloadError>,
    ) -> Result<Handle, WorkloadError> {
        scaffold::try_escape(self, f)
    }

    fn within<R>(
        &mut self,
        f: impl FnOnce(&mut Self) -> Result<R, WorkloadError>,
    ) -> Result<R, WorkloadError> {
        Mutator::scope(self, f)
    }
}

/// Vectors as plain values: the reference.
struct Plain;

impl Vectors for Plain {
    type V = [f64; 3];

    fn vec(&mut self, x: f64, y: f64, z: f64) -> Result<[f64; 3], GcError> {
        Ok([x, y, z])
    }

    fn xyz(&self, v: [f64; 3]) -> [f64; 3] {
        v
    }

    fn keep(
        &mut self,
        f: impl FnOnce(&mut Self) -> Result<[f64; 3], WorkloadError>,
    ) -> Result<[f64; 3], WorkloadError> {
        f(self)
    }

    fn within<R>(
        &mut self,
        f: impl FnOnce(&mut Self) -> Result<R, WorkloadError>,
    ) -> Result<R, WorkloadError> {
        f(self)
    }
}

/// A shape as the tracer sees it.
struct ShapeView<V> {
    sphere: bool,
    pos: V,
    color: V,
    radius: f64,
    reflect: f64,
    diffuse: f64,
}

/// A light as the tracer sees it.
struct LightView<V> {
    pos: V,
    color: V,
}

/// The scene as the tracer sees it.
struct SceneView<V> {
    shapes: Vec<ShapeView<V>>,
    lights: Vec<LightView<V>>,
}

// ---- the tracer ----

/// The nearest `t > EPS` at which the ray `orig + t dir` meets `s`.
fn intersect<B: Vectors>(
    b: &mut B,
    s: &ShapeView<B::V>,
    orig: B::V,
    dir: B::V,
) -> Result<Option<f64>, GcError> {
    if !s.sphere {
        let denom = b.dot(s.pos, dir);
        if denom.abs() < 1e-9 {
            return Ok(None);
        }
        let t = (s.radius - b.dot(s.pos, orig)) / denom;
        return Ok((t > EPS).then_some(t));
    }
    let oc = b.sub(orig, s.pos)?;
    let half_b = b.dot(oc, dir);
    let c = b.dot(oc, oc) - s.radius * s.radius;
    let disc = half_b * half_b - c;
    if disc < 0.0 {
        return Ok(None);
    }
    let root = disc.sqrt();
    let near = -half_b - root;
    if near > EPS {
        return Ok(Some(near));
    }
    let far = -half_b + root;
    Ok((far > EPS).then_some(far))
}

/// `x^32` by squaring (the same operations wherever it runs).
fn pow32(x: f64) -> f64 {
    let x2 = x * x;
    let x4 = x2 * x2;
    let x8 = x4 * x4;
    let x16 = x8 * x8;
    x16 * x16
}

/// The color seen along the ray `orig + t dir` (`dir` normalized), after `depth` bounces.
fn trace<B: Vectors>(
    b: &mut B,
    scene: &SceneView<B::V>,
    orig: B::V,
    dir: B::V,
    depth: u32,
    rays: &mut u64,
) -> Result<B::V, WorkloadError> {
    *rays += 1;
    b.keep(|b| {
        let mut nearest: Option<(f64, usize)> = None;
        for (i, s) in scene.shapes.iter().enumerate() {
            if let Some(t) = intersect(b, s, orig, dir)? {
                let closer = match nearest {
                    Some((best, _)) => t < best,
                    None => true,
                };
                if closer {
                    nearest = Some((t, i));
                }
            }
        }
        let Some((t, i)) = nearest else {
            // The sky: white at the horizon, blue above.
            let up = 0.5 * (b.xyz(dir)[1] + 1.0);
            return Ok(b.vec(1.0 - up * 0.5, 1.0 - up * 0.3, 1.0)?);
        };
        let s = &scene.shapes[i];
        let step = b.scale(dir, t)?;
        let p = b.add(orig, step)?;
        let n = if s.sphere {
            let out = b.sub(p, s.pos)?;
            b.normalize(out)?
        } else {
            s.pos
        };
        let base = if s.sphere {
            s.color
        } else {
            let [x, _, z] = b.xyz(p);
            if (x.floor() + z.floor()).rem_euclid(2.0) == 0.0 {
                s.color
            } else {
                b.scale(s.color, 0.3)?
            }
        };
        let lift = b.scale(n, EPS * 10.0)?;
        let above = b.add(p, lift)?;
        let mut color = b.scale(base, AMBIENT)?;
        for l in &scene.lights {
            let to_light = b.sub(l.pos, p)?;
            let dist = b.length(to_light);
            let ldir = b.scale(to_light, 1.0 / dist)?;
            let lambert = b.dot(n, ldir);
            if lambert <= 0.0 {
                continue;
            }
            let mut shadowed = false;
            for other in &scene.shapes {
                if intersect(b, other, above, ldir)?.is_some_and(|t| t < dist) {
                    shadowed = true;
                    break;
                }
            }
            if shadowed {
                continue;
            }
            let lit = b.mul(base, l.color)?;
            let diffuse = b.scale(lit, lambert * s.diffuse)?;
            color = b.add(color, diffuse)?;
            let half = b.sub(ldir, dir)?;
            let half = b.normalize(half)?;
            let spec = pow32(b.dot(n, half).max(0.0)) * SPECULAR;
            let highlight = b.scale(l.color, spec)?;
            color = b.add(color, highlight)?;
        }
        if depth < MAX_DEPTH && s.reflect > 0.0 {
            let bend = b.scale(n, 2.0 * b.dot(dir, n))?;
            let r = b.sub(dir, bend)?;
            let seen = trace(b, scene, above, r, depth + 1, rays)?;
            let own = b.scale(color, 1.0 - s.reflect)?;
            let mirrored = b.scale(seen, s.reflect)?;
            color = b.add(own, mirrored)?;
        }
        Ok(color)
    })
}

/// Quantizes a color component to 0..=255.
fn quantize(c: f64) -> u64 {
    (c.clamp(0.0, 1.0) * 255.0 + 0.5) as u64
}

/// The checksum contribution of pixel `(x, y)` of an `side x side` image.
fn pixel<B: Vectors>(
    b: &mut B,
    scene: &SceneView<B::V>,
    side: usize,
    x: usize,
    y: usize,
    rays: &mut u64,
) -> Result<u64, WorkloadError> {
    b.within(|b| {
        let mut acc = b.vec(0.0, 0.0, 0.0)?;
        for (sx, sy) in SAMPLES {
            acc = b.keep(|b| {
                let u = ((x as f64 + sx) / side as f64) * 2.0 - 1.0;
                let v = 1.0 - ((y as f64 + sy) / side as f64) * 2.0;
                let eye = b.vec(EYE[0], EYE[1], EYE[2])?;
                let toward = b.vec(u, v, FOCAL)?;
                let dir = b.normalize(toward)?;
                let c = trace(b, scene, eye, dir, 0, rays)?;
                Ok(b.add(acc, c)?)
            })?;
        }
        let [r, g, bl] = b.xyz(acc);
        let n = SAMPLES.len() as f64;
        let rgb = quantize(r / n) | quantize(g / n) << 8 | quantize(bl / n) << 16;
        Ok(rgb.wrapping_mul(1 + (y * side + x) as u64))
    })
}

/// The checksum contribution of row `y`.
fn row<B: Vectors>(
    b: &mut B,
    scene: &SceneView<B::V>,
    side: usize,
    y: usize,
    rays: &mut u64,
) -> Result<u64, WorkloadError> {
    let mut sum = 0u64;
    for x in 0..side {
        sum = sum.wrapping_add(pixel(b, scene, side, x, y, rays)?);
    }
    Ok(sum)
}

// ---- the scene in the heap, and the reference ----

/// The scene of plain values.
fn plain_scene() -> SceneView<[f64; 3]> {
    SceneView {
        shapes: SHAPE_DEFS
            .iter()
            .map(|d| ShapeView {
                sphere: d.sphere,
                pos: d.pos,
                color: d.color,
                radius: d.radius,
                reflect: d.reflect,
                diffuse: d.diffuse,
            })
            .collect(),
        lights: LIGHT_DEFS
            .iter()
            .map(|&(pos, color)| LightView { pos, color })
            .collect(),
    }
}

/// The checksum of one round at image side `side`, traced with plain vectors.
pub fn expected_checksum(side: u32) -> u64 {
    let scene = plain_scene();
    let side = side as usize;
    let mut rays = 0;
    (0..side).fold(0u64, |sum, y| {
        let r = row(&mut Plain, &scene, side, y, &mut rays).expect("plain vectors never fail");
        sum.wrapping_add(r)
    })
}

/// Builds the scene in the heap (the handle belongs to the caller's scope).
fn build_scene(m: &mut Mutator<'_>) -> Result<Handle, GcError> {
    let scene = m.alloc(SCENE)?;
    m.scope(|m| {
        let shapes = m.alloc_ref_array(SHAPE_DEFS.len())?;
        m.set_ref(scene, SHAPES, Some(shapes));
        for (i, d) in SHAPE_DEFS.iter().enumerate() {
            m.scope(|m| {
                let s = m.alloc(SHAPE)?;
                m.set_ref(shapes, i, Some(s));
                m.write_u64(s, S_KIND, u64::from(!d.sphere));
                m.write_f64(s, S_RADIUS, d.radius);
                m.write_f64(s, S_REFLECT, d.reflect);
                m.write_f64(s, S_DIFFUSE, d.diffuse);
                set_pos_and_color(m, s, d.pos, d.color)
            })?;
        }
        let lights = m.alloc_ref_array(LIGHT_DEFS.len())?;
        m.set_ref(scene, LIGHTS, Some(lights));
        for (i, &(pos, color)) in LIGHT_DEFS.iter().enumerate() {
            m.scope(|m| {
                let l = m.alloc(LIGHT)?;
                m.set_ref(lights, i, Some(l));
                set_pos_and_color(m, l, pos, color)
            })?;
        }
        Ok::<_, GcError>(())
    })?;
    Ok(scene)
}

/// New vectors `pos` and `color`, in this order, in the `pos` and `color` slots of the shape or
/// light `obj` (the handles are the caller's).
fn set_pos_and_color(
    m: &mut Mutator<'_>,
    obj: Handle,
    pos: [f64; 3],
    color: [f64; 3],
) -> Result<(), GcError> {
    let pos = m.vec(pos[0], pos[1], pos[2])?;
    m.set_ref(obj, POS, Some(pos));
    let color = m.vec(color[0], color[1], color[2])?;
    m.set_ref(obj, COLOR, Some(color));
    Ok(())
}

/// A scene that lost a part, which `what` names.
fn lost(what: &str) -> WorkloadError {
    WorkloadError::Corrupt(format!("render: the scene lost {what}"))
}

/// The `pos` and `color` vectors of `obj`, a shape or light (`what`), as handles of the
/// caller's scope (the tracer's vectors live across allocations).
fn pos_and_color(
    m: &Mutator<'_>,
    obj: Gc<'_>,
    what: &str,
) -> Result<(Handle, Handle), WorkloadError> {
    let pos = obj
        .get(POS)
        .ok_or_else(|| lost(&format!("a {what}'s position")))?;
    let color = obj
        .get(COLOR)
        .ok_or_else(|| lost(&format!("a {what}'s color")))?;
    Ok((m.root(pos), m.root(color)))
}

/// Reads the heap scene into a view whose vectors are handles of the caller's scope.
fn load_scene(m: &Mutator<'_>, scene: Handle) -> Result<SceneView<Handle>, WorkloadError> {
    let scene = view(m, scene);
    let shapes = scene.get(SHAPES).ok_or_else(|| lost("its shapes"))?;
    let lights = scene.get(LIGHTS).ok_or_else(|| lost("its lights"))?;
    if shapes.array_len() != SHAPE_DEFS.len() || lights.array_len() != LIGHT_DEFS.len() {
        return Err(lost("shapes or lights"));
    }
    let mut view = SceneView {
        shapes: Vec::with_capacity(SHAPE_DEFS.len()),
        lights: Vec::with_capacity(LIGHT_DEFS.len()),
    };
    for i in 0..SHAPE_DEFS.len() {
        let s = shapes.get(i).ok_or_else(|| lost("a shape"))?;
        let (pos, color) = pos_and_color(m, s, "shape")?;
        view.shapes.push(ShapeView {
            sphere: s.read_u64(S_KIND) == 0,
            pos,
            color,
            radius: s.read_f64(S_RADIUS),
            reflect: s.read_f64(S_REFLECT),
            diffuse: s.read_f64(S_DIFFUSE),
        });
    }
    for i in 0..LIGHT_DEFS.len() {
        let l = lights.get(i).ok_or_else(|| lost("a light"))?;
        let (pos, color) = pos_and_color(m, l, "light")?;
        view.lights.push(LightView { pos, color });
    }
    Ok(view)
}

// ---- the workload ----

/// The `render` workload. See the module documentation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Render;

impl SizedWorkload for Render {
    const NAME: &'static str = NAME;
    const DESCRIPTION: &'static str =
        "a ray tracer whose every vector operation allocates a new 3-double object; the \
         mutators share the rows of an N x N image (size N, default 200)";
    const SIZE: Size = SIZE;

    fn run(heap: &Heap, params: &WorkloadParams, n: u32) -> Result<WorkloadResult, WorkloadError> {
        let expected = SIZE.stored_or(n, DEFAULT_EXPECTED, || expected_checksum(n));
        let side = n as usize;
        let mutators = params.mutators;
        let rays = AtomicU64::new(0);
        let checksum = run_copies(heap, params, NAME, |m, copy, _round| {
            let mut my_rays = 0;
            let mine = render_share(m, side, copy, mutators, &mut my_rays)?;
            rays.fetch_add(my_rays, Ordering::Relaxed);
            Ok(mine)
        })?;
        let details = vec![
            detail("image", format!("{side} x {side}")),
            detail("samples per pixel", SAMPLES.len()),
            detail("rays traced (all rounds)", rays.into_inner()),
        ];
        Ok(scaffold::result(checksum, Some(expected), params, details))
    }
}

/// Mutator `copy` of `mutators`: builds its scene, renders rows `copy, copy + mutators, ...`.
fn render_share(
    m: &mut Mutator<'_>,
    side: usize,
    copy: usize,
    mutators: usize,
    rays: &mut u64,
) -> Result<u64, WorkloadError> {
    m.scope(|m| {
        let scene = build_scene(m)?;
        let mut sum = 0u64;
        for y in (copy..side).step_by(mutators) {
            sum = sum.wrapping_add(m.scope(|m| {
                let view = load_scene(m, scene)?;
                row(m, &view, side, y, rays)
            })?);
        }
        Ok(sum)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_default_checksum_is_the_reference() {
        assert_eq!(expected_checksum(SIZE.default()), DEFAULT_EXPECTED);
    }

    #[test]
    fn the_image_is_not_trivial() {
        // Distinct colors in a small image: sky, plane (both checker colors), spheres.
        let scene = plain_scene();
        let mut colors = std::collections::HashSet::new();
        let mut rays = 0;
        for y in 0..16 {
            for x in 0..16 {
                let c = pixel(&mut Plain, &scene, 16, x, y, &mut rays).unwrap();
                colors.insert(c / (1 + (y * 16 + x) as u64));
            }
        }
        assert!(colors.len() > 100, "{} colors", colors.len());
        assert!(rays > 4 * 256, "{rays} rays");
    }

    #[test]
    fn heap_rows_match_plain_rows() {
        let heap = scaffold::test_heap(4 * MIB, false);
        let mut m = heap.attach();
        let mut rays = 0;
        let sum = render_share(&mut m, 24, 0, 1, &mut rays).unwrap();
        assert_eq!(sum, expected_checksum(24));
        assert_eq!(m.handle_count(), 0);
        assert!(heap.collection_count() > 0);
        // A damaged scene is reported.
        m.scope(|m| {
            let scene = build_scene(m).unwrap();
            let shapes = m.get_ref(scene, SHAPES).unwrap();
            let s = m.get_ref(shapes, 3).unwrap();
            m.set_ref(s, COLOR, None);
            let e = load_scene(m, scene).err().unwrap().to_string();
            assert!(e.contains("lost a shape's color"), "{e}");
        });
    }
}
