//! `#[derive(Trace)]` for Concord's typed objects (re-exported as `concord::Trace`; the design
//! and its safety argument are in the documentation of `concord::typed`).
//!
//! The derive reads a struct with named fields and classifies each field by its type, as
//! written:
//!
//! - `Option<Root<T>>` is a nullable reference field, `Root<T>` a never-null one (any path
//!   ending in `Root`, e.g. `concord::typed::Root<T>`). `T` may be `Self`, the struct itself.
//!   Reference fields take the object's reference slots, in declaration order: the first is
//!   slot 0.
//! - `u8`, `u16`, `u32`, `u64`, `usize`, `i8`, `i16`, `i32`, `i64`, `isize`, `f32`, `f64` and
//!   `bool`, also spelled `core::primitive::u64` or `std::primitive::u64` (with or without a
//!   leading `::`), are payload fields. They are laid out by decreasing size (declaration order
//!   within one size), so every field sits at a multiple of its size with no padding: the
//!   payload starts on a word boundary, so each is naturally aligned.
//!
//! Anything else is refused with a compile error naming the field: Rust references, `String`,
//! `Vec`, `Box`, `Option<u64>`, arrays, tuples, type aliases of the types above and any other
//! path to them (`crate::Key`, `my::u64`: the derive sees names, not types), as are generic
//! structs, tuple and unit structs, enums and unions.
//!
//! A field may have any name, `clone`, `fmt` and `type` (as `r#type`) included: the
//! generated code calls everything by its full path, so a getter named like a trait method
//! changes nothing but what `view.name()` calls. Two fields whose methods would have one name
//! (fields `x` and `set_x`: `set_x` would be both a setter and a getter) are a compile error
//! naming both.
//!
//! It emits, for `struct Node`: `unsafe impl concord::typed::Trace for Node` (the
//! `ObjectType` constant, the field table, the constructor glue), and `struct NodeView<'m>`
//! (same visibility as `Node`) with, per field, a getter named after the field and a setter
//! `set_<field>`. Every access is a call of a `#[doc(hidden)]` unsafe function of
//! `concord::typed::__private` at a slot index or payload offset computed here, which is what
//! makes the unchecked accesses sound: the constants come from the same field list as the
//! `ObjectType`. The accesses use the primitive itself (`::core::primitive::u8`) and the field's
//! type as written, so a path that looks like a primitive but is not one does not compile:
//!
//! ```compile_fail,E0308
//! mod core {
//!     pub mod primitive {
//!         #[allow(non_camel_case_types)]
//!         pub type u8 = u64;
//!     }
//! }
//! #[derive(concord::Trace)]
//! struct Tricky {
//!     small: core::primitive::u8, // error: expected `u64`, found `u8`
//! }
//! # fn main() {}
//! ```

use proc_macro::TokenStream;
use proc_macro2::{Group, Literal, TokenStream as TokenStream2, TokenTree};
use quote::{format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{
    parse_macro_input, Data, DeriveInput, Fields, GenericArgument, Ident, PathArguments, Type,
};

/// Derive `concord::typed::Trace`: a struct becomes the layout of a Concord object, with a
/// typed view `<Name>View<'m>` whose getters and setters reach its fields by name. See the
/// crate documentation for what a field may be.
#[proc_macro_derive(Trace)]
pub fn derive_trace(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    match expand(&input) {
        Ok(ts) => ts.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

/// Payload types the derive lays out: name, size in bytes.
const PLAIN: &[(&str, usize)] = &[
    ("u8", 1),
    ("u16", 2),
    ("u32", 4),
    ("u64", 8),
    ("usize", 8),
    ("i8", 1),
    ("i16", 2),
    ("i32", 4),
    ("i64", 8),
    ("isize", 8),
    ("f32", 4),
    ("f64", 8),
    ("bool", 1),
];

/// The list of accepted field types, for error messages.
const ACCEPTED: &str = "a payload field must be plain data (u8, u16, u32, u64, usize, i8, i16, \
     i32, i64, isize, f32, f64 or bool) and a reference field `Option<Root<T>>` or `Root<T>` \
     with `T: concord::Trace`";

/// Largest number of reference slots and payload bytes `ObjectType::fixed` takes.
const MAX_FIXED: usize = u16::MAX as usize;

enum Kind {
    /// A reference slot to an object of type `target`.
    Ref { target: Type, nullable: bool },
    /// A payload field of primitive `ty`, `size` bytes.
    Plain { ty: Ident, size: usize },
}

struct Field {
    ident: Ident,
    ty: Type,
    kind: Kind,
}

fn expand(input: &DeriveInput) -> syn::Result<TokenStream2> {
    let name = &input.ident;
    if !input.generics.params.is_empty() {
        return Err(syn::Error::new(
            input.generics.span(),
            format!(
                "#[derive(concord::Trace)] does not support generic structs: `{name}` must \
                 have one fixed layout (declare one struct per instantiation)"
            ),
        ));
    }
    if let Some(w) = &input.generics.where_clause {
        return Err(syn::Error::new(
            w.span(),
            "#[derive(concord::Trace)] does not support where clauses",
        ));
    }
    let named = match &input.data {
        Data::Struct(s) => match &s.fields {
            Fields::Named(f) => f,
            Fields::Unnamed(_) => {
                return Err(syn::Error::new(
                    name.span(),
                    format!(
                        "#[derive(concord::Trace)] needs named fields: `{name}` is a tuple \
                         struct, and its view's accessors are named after the fields"
                    ),
                ))
            }
            Fields::Unit => {
                return Err(syn::Error::new(
                    name.span(),
                    format!(
                        "#[derive(concord::Trace)] needs a struct with named fields: `{name}` \
                         is a unit struct (write `struct {name} {{}}` for an empty object)"
                    ),
                ))
            }
        },
        Data::Enum(e) => {
            return Err(syn::Error::new(
                e.enum_token.span,
                format!(
                    "#[derive(concord::Trace)] supports structs only: `{name}` is an enum, and \
                     a Concord object has one fixed layout"
                ),
            ))
        }
        Data::Union(u) => {
            return Err(syn::Error::new(
                u.union_token.span,
                format!("#[derive(concord::Trace)] supports structs only: `{name}` is a union"),
            ))
        }
    };

    let mut fields = Vec::new();
    let mut errors: Option<syn::Error> = None;
    let mut add_error = |e: syn::Error| match &mut errors {
        Some(all) => all.combine(e),
        None => errors = Some(e),
    };
    // The view's methods, each with the field that makes it: (name, field, is the setter).
    let mut methods: Vec<(String, &Ident, bool)> = Vec::new();
    for f in &named.named {
        let ident = f.ident.as_ref().expect("named field");
        let field = ident.unraw().to_string();
        for (method, setter) in [(field.clone(), false), (format!("set_{field}"), true)] {
            let role = |setter: bool| if setter { "setter" } else { "getter" };
            match methods.iter().find(|m| m.0 == method) {
                // Two fields of one name: rustc reports that itself.
                Some((_, other, _)) if other.unraw() == field => {}
                Some((_, other, other_setter)) => add_error(syn::Error::new(
                    ident.span(),
                    format!(
                        "fields `{}` and `{field}` both make a view method `{method}` (the {} \
                         of `{}` and the {} of `{field}`): rename one of them",
                        other.unraw(),
                        role(*other_setter),
                        other.unraw(),
                        role(setter),
                    ),
                )),
                None => methods.push((method, ident, setter)),
            }
        }
        match classify(ident, &f.ty, name) {
            Ok(kind) => fields.push(Field {
                ident: ident.clone(),
                ty: f.ty.clone(),
                kind,
            }),
            Err(e) => add_error(e),
        }
    }
    if let Some(e) = errors {
        return Err(e);
    }

    // Layout: reference slots in declaration order, payload by decreasing size.
    let mut slots = Vec::new(); // (field index, slot)
    for (i, f) in fields.iter().enumerate() {
        if let Kind::Ref { .. } = f.kind {
            slots.push((i, slots.len()));
        }
    }
    let mut plain: Vec<(usize, usize)> = fields
        .iter()
        .enumerate()
        .filter_map(|(i, f)| match f.kind {
            Kind::Plain { size, .. } => Some((i, size)),
            Kind::Ref { .. } => None,
        })
        .collect();
    plain.sort_by_key(|p| std::cmp::Reverse(p.1)); // stable: declaration order within a size
    let mut offsets = Vec::new(); // (field index, offset)
    let mut payload = 0usize;
    for (i, size) in plain {
        offsets.push((i, payload));
        payload += size;
    }
    let refs = slots.len();
    if refs > MAX_FIXED || payload > MAX_FIXED {
        return Err(syn::Error::new(
            name.span(),
            format!(
                "`{name}` has {refs} reference fields and {payload} payload bytes: a typed \
                 object holds at most {MAX_FIXED} of each"
            ),
        ));
    }
    let slot_of = |i: usize| slots.iter().find(|s| s.0 == i).map(|s| s.1);
    let offset_of = |i: usize| offsets.iter().find(|o| o.0 == i).map(|o| o.1);

    let vis = &input.vis;
    let view = format_ident!("{}View", name);
    let p = quote!(::concord::typed::__private);
    // Every call in the generated code is a path (`#raw::__read(self.0, ..)`, `#view::key(v)`),
    // never a method call: a getter is named after its field, and a field named `clone`, `fmt`
    // or `eq` must not turn `self.clone()` into `Clone::clone` or `Debug::fmt`.
    let raw = quote!(#p::RawView);
    let refs_u16 = refs as u16;
    let refs_lit = Literal::usize_unsuffixed(refs);
    let payload_u16 = payload as u16;

    let mut accessors = Vec::new();
    let mut layout = Vec::new();
    let mut ref_exprs = Vec::new();
    let mut init = Vec::new();
    let mut debug = Vec::new();
    for (i, f) in fields.iter().enumerate() {
        let ident = &f.ident;
        let fname = ident.unraw().to_string();
        let setter = format_ident!("set_{}", ident.unraw(), span = ident.span());
        let span = f.ty.span();
        match &f.kind {
            Kind::Ref { target, nullable } => {
                let slot = slot_of(i).expect("reference field has a slot");
                let get_doc = format!(
                    "Reference field `{fname}` (slot {slot}; {}): one load.",
                    if *nullable {
                        "`None` for null"
                    } else {
                        "never null"
                    }
                );
                let set_doc = format!(
                    "Store into reference field `{fname}`, with the write barrier. Panics if \
                     the object or the value belongs to another heap than `m`'s."
                );
                let slot = Literal::usize_unsuffixed(slot);
                let tview = quote_spanned!(span=> <#target as ::concord::typed::Trace>::View);
                layout.push(quote!(::concord::typed::FieldLayout {
                    name: #fname,
                    place: ::concord::typed::FieldPlace::Slot(#slot),
                }));
                debug.push((fname.clone(), quote!(&#raw::__slot_addr(self.0, #slot))));
                if *nullable {
                    ref_exprs.push(quote!(::core::option::Option::map(
                        self.#ident,
                        // SAFETY: the handle goes to this type's constructor (the contract of
                        // `__refs`).
                        |r| unsafe { ::concord::typed::Root::<#target>::__handle(r) },
                    )));
                    accessors.push(quote! {
                        #[doc = #get_doc]
                        #[inline(always)]
                        #vis fn #ident(self) -> ::core::option::Option<#tview<'m>> {
                            // SAFETY: slot #slot is field `#ident` of `Self`'s layout, declared
                            // `Option<Root<#target>>`: it holds null or an object of that layout.
                            unsafe { #raw::__slot::<#target>(self.0, #slot) }
                        }

                        #[doc = #set_doc]
                        #[inline(always)]
                        #[track_caller]
                        #vis fn #setter(
                            self,
                            m: &::concord::Mutator<'_>,
                            value: ::core::option::Option<#tview<'_>>,
                        ) {
                            // SAFETY: as in the getter; the value is `None` or a view of `#target`.
                            unsafe {
                                #raw::__store::<#target>(
                                    self.0,
                                    m,
                                    #slot,
                                    ::core::option::Option::map(value, #p::raw_of::<#target>),
                                )
                            }
                        }
                    });
                } else {
                    ref_exprs.push(quote!(::core::option::Option::Some(
                        // SAFETY: as above.
                        unsafe { ::concord::typed::Root::<#target>::__handle(self.#ident) },
                    )));
                    accessors.push(quote! {
                        #[doc = #get_doc]
                        #[inline(always)]
                        #vis fn #ident(self) -> #tview<'m> {
                            // SAFETY: slot #slot is field `#ident` of `Self`'s layout, declared
                            // `Root<#target>`: it holds an object of that layout, never null.
                            unsafe { #raw::__slot_non_null::<#target>(self.0, #slot) }
                        }

                        #[doc = #set_doc]
                        #[inline(always)]
                        #[track_caller]
                        #vis fn #setter(self, m: &::concord::Mutator<'_>, value: #tview<'_>) {
                            // SAFETY: as in the getter; the value is a view of `#target`.
                            unsafe {
                                #raw::__store::<#target>(
                                    self.0,
                                    m,
                                    #slot,
                                    ::core::option::Option::Some(#p::raw_of::<#target>(value)),
                                )
                            }
                        }
                    });
                }
            }
            Kind::Plain { ty, size } => {
                let offset = offset_of(i).expect("payload field has an offset");
                let get_doc = format!("Payload field `{fname}` (offset {offset}): one load.");
                let set_doc = format!("Write payload field `{fname}`: one store.");
                let offset = Literal::usize_unsuffixed(offset);
                // The primitive itself, whatever the name means where the struct is (a local
                // `type u8 = u64;` must not make an 8-byte field of a 1-byte slot): a field whose
                // type is not that primitive does not compile.
                let prim = quote!(::core::primitive::#ty);
                let size = Literal::usize_unsuffixed(*size);
                let fty = &f.ty;
                layout.push(quote!(::concord::typed::FieldLayout {
                    name: #fname,
                    place: ::concord::typed::FieldPlace::Payload { offset: #offset, size: #size },
                }));
                // The getter by its path: inherent functions come before trait methods.
                debug.push((fname.clone(), quote!(&#view::#ident(*self))));
                init.push(quote! {
                    // SAFETY: `#offset` is field `#ident`'s offset in `Self`'s payload, of type `#ty`.
                    unsafe { #raw::__write::<#prim>(raw, #offset, self.#ident) };
                });
                accessors.push(quote! {
                    #[doc = #get_doc]
                    #[inline(always)]
                    #vis fn #ident(self) -> #fty {
                        // SAFETY: `#offset` is field `#ident`'s offset in `Self`'s payload, of type `#ty`.
                        unsafe { #raw::__read::<#prim>(self.0, #offset) }
                    }

                    #[doc = #set_doc]
                    #[inline(always)]
                    #vis fn #setter(self, value: #fty) {
                        // SAFETY: as in the getter.
                        unsafe { #raw::__write::<#prim>(self.0, #offset, value) }
                    }
                });
            }
        }
    }

    // Each referenced type must be a typed object: checked with the field's span, so an error
    // names the field's type.
    let ref_checks = fields.iter().filter_map(|f| match &f.kind {
        Kind::Ref { target, .. } => {
            Some(quote_spanned!(f.ty.span()=> #p::assert_trace::<#target>();))
        }
        Kind::Plain { .. } => None,
    });
    let name_str = name.unraw().to_string();
    let (debug_names, debug_values): (Vec<_>, Vec<_>) = debug.into_iter().unzip();
    let view_doc = format!(
        "A typed view of a [`{name}`] object: a direct reference valid while its mutator is \
         borrowed shared (as a `concord::Gc`). Getters return values; see `concord::typed`."
    );

    Ok(quote! {
        #[doc = #view_doc]
        #vis struct #view<'m>(#raw<'m, #name>);

        impl<'m> ::core::clone::Clone for #view<'m> {
            #[inline(always)]
            fn clone(&self) -> Self {
                *self
            }
        }

        impl<'m> ::core::marker::Copy for #view<'m> {}

        /// The same object.
        impl<'m> ::core::cmp::PartialEq for #view<'m> {
            #[inline(always)]
            fn eq(&self, other: &Self) -> bool {
                ::core::cmp::PartialEq::eq(&self.0, &other.0)
            }
        }

        impl<'m> ::core::cmp::Eq for #view<'m> {}

        // The accessors are named after the fields: a field named against the naming
        // convention is already warned about at the field.
        #[allow(dead_code, non_snake_case)]
        impl<'m> #view<'m> {
            #(#accessors)*
        }

        impl<'m> ::core::fmt::Debug for #view<'m> {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                let mut d = ::core::fmt::Formatter::debug_struct(f, #name_str);
                #(::core::fmt::DebugStruct::field(&mut d, #debug_names, #debug_values);)*
                ::core::fmt::DebugStruct::finish(&mut d)
            }
        }

        impl<'m> ::concord::typed::TypedView<'m> for #view<'m> {
            type Target = #name;
            #[inline(always)]
            fn __raw(self) -> #raw<'m, #name> {
                self.0
            }
        }

        // SAFETY: `TYPE`, `LAYOUT`, `__refs` and `__init_payload` are computed from one field
        // list: reference fields are slots 0.. in declaration order (each holding its declared
        // type), payload fields lie at the offsets above, inside `TYPE`'s payload.
        unsafe impl ::concord::typed::Trace for #name {
            const TYPE: ::concord::ObjectType = ::concord::ObjectType::fixed(#refs_u16, #payload_u16);
            const LAYOUT: &'static [::concord::typed::FieldLayout] = &[#(#layout),*];
            type View<'m> = #view<'m>;
            type __Refs = [::core::option::Option<::concord::Handle>; #refs_lit];

            #[inline(always)]
            unsafe fn __refs(&self) -> Self::__Refs {
                #(#ref_checks)*
                [#(#ref_exprs),*]
            }

            #[inline(always)]
            fn __init_payload(&self, raw: #raw<'_, Self>) {
                let _ = &raw;
                #(#init)*
            }

            #[inline(always)]
            fn __view(raw: #raw<'_, Self>) -> #view<'_> {
                #view(raw)
            }
        }
    })
}

/// What a field of type `ty` of struct `name` is, or an error naming the field.
fn classify(field: &Ident, ty: &Type, name: &Ident) -> syn::Result<Kind> {
    let fname = field.unraw();
    let shown = quote!(#ty)
        .to_string()
        .replace(" :: ", "::")
        .replace(":: ", "::")
        .replace(" < ", "<")
        .replace(" >", ">")
        .replace("& ", "&")
        .replace("* ", "*");
    let refuse = |why: String| {
        Err(syn::Error::new_spanned(
            ty,
            format!("field `{fname}`: {why}"),
        ))
    };
    match ty {
        Type::Path(tp) if tp.qself.is_none() => {
            let last = tp.path.segments.last().expect("a path has a segment");
            let id = last.ident.to_string();
            if let Some(prim) = primitive(&tp.path) {
                if let Some((_, size)) = PLAIN.iter().find(|(n, _)| prim == n) {
                    return Ok(Kind::Plain {
                        ty: prim.clone(),
                        size: *size,
                    });
                }
            }
            if id == "Root" {
                if let Some(target) = single_type_arg(&last.arguments) {
                    return Ok(Kind::Ref {
                        target: self_is(&target, name)?,
                        nullable: false,
                    });
                }
                return refuse(format!(
                    "`{shown}`: a reference field is `Root<T>` with one type argument"
                ));
            }
            if id == "Option" {
                if let Some(Type::Path(inner)) = single_type_arg(&last.arguments) {
                    if let Some(seg) = inner.path.segments.last() {
                        if seg.ident == "Root" && inner.qself.is_none() {
                            if let Some(target) = single_type_arg(&seg.arguments) {
                                return Ok(Kind::Ref {
                                    target: self_is(&target, name)?,
                                    nullable: true,
                                });
                            }
                        }
                    }
                }
                return refuse(format!(
                    "`{shown}` cannot be laid out in a Concord object: `Option` is only for \
                     nullable references, `Option<Root<T>>` ({ACCEPTED})"
                ));
            }
            let why = match id.as_str() {
                "String" | "Vec" | "Box" | "Rc" | "Arc" | "HashMap" | "BTreeMap" | "str" => {
                    format!(
                        "`{shown}` cannot be laid out in a Concord object: it owns Rust heap \
                         memory, which the collector neither traces nor frees; keep such data \
                         in its own object and refer to it with `Option<Root<T>>` ({ACCEPTED})"
                    )
                }
                "u128" | "i128" => format!(
                    "`{shown}` cannot be laid out in a Concord object: 16-byte fields need an \
                     alignment objects do not have; use two u64 fields ({ACCEPTED})"
                ),
                "char" => format!(
                    "`{shown}` cannot be laid out in a Concord object: not every bit pattern \
                     is a char; use u32 ({ACCEPTED})"
                ),
                _ => format!(
                    "`{shown}` cannot be laid out in a Concord object (the derive sees type \
                     names, so type aliases are refused too): {ACCEPTED}"
                ),
            };
            refuse(why)
        }
        Type::Reference(_) | Type::Ptr(_) => refuse(format!(
            "`{shown}` cannot be laid out in a Concord object: it holds Rust references or \
             pointers, which the collector would not update when objects move; refer to \
             another object with `Option<Root<T>>` ({ACCEPTED})"
        )),
        _ => refuse(format!(
            "`{shown}` cannot be laid out in a Concord object: {ACCEPTED}"
        )),
    }
}

/// The primitive a path names, if it is one spelled as a primitive: `u64`, or
/// `core::primitive::u64` / `std::primitive::u64`, with or without a leading `::` (which is
/// what the generated code uses). Any other path, `crate::u64` or `Key`, is a name the derive
/// cannot see through (an alias, or a type of the user's).
fn primitive(path: &syn::Path) -> Option<&Ident> {
    if path.segments.iter().any(|s| !s.arguments.is_none()) {
        return None;
    }
    let segments: Vec<&Ident> = path.segments.iter().map(|s| &s.ident).collect();
    match segments[..] {
        [prim] if path.leading_colon.is_none() => Some(prim),
        [krate, module, prim] if (krate == "core" || krate == "std") && module == "primitive" => {
            Some(prim)
        }
        _ => None,
    }
}

/// `ty` with `Self` replaced by `name`: in the struct, `Self` is the struct, but the
/// reference field's target type also goes into the view's `impl`, where `Self` is the view.
fn self_is(ty: &Type, name: &Ident) -> syn::Result<Type> {
    fn replace(tokens: TokenStream2, name: &Ident) -> TokenStream2 {
        tokens
            .into_iter()
            .map(|t| match t {
                TokenTree::Ident(i) if i == "Self" => {
                    let mut named = name.clone();
                    named.set_span(i.span());
                    TokenTree::Ident(named)
                }
                TokenTree::Group(g) => {
                    let mut inner = Group::new(g.delimiter(), replace(g.stream(), name));
                    inner.set_span(g.span());
                    TokenTree::Group(inner)
                }
                t => t,
            })
            .collect()
    }
    syn::parse2(replace(quote!(#ty), name))
}

/// The one type argument of `<T>`, if that is what `args` is.
fn single_type_arg(args: &PathArguments) -> Option<Type> {
    match args {
        PathArguments::AngleBracketed(a) if a.args.len() == 1 => match a.args.first() {
            Some(GenericArgument::Type(t)) => Some(t.clone()),
            _ => None,
        },
        _ => None,
    }
}
