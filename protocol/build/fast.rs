//! `Fast` impls (see `protocol/src/fast.rs`): per type, a check straight on the line's bytes that is
//! sure or bails. Only the types client requests and client responses reach get one.

use super::{all_deny, deny_variant_ident, Emitter};
use crate::model::{Body, Field, Kind, Presence, Repr, Ty};
use proc_macro2::TokenStream;
use quote::quote;
use std::collections::HashSet;

/// `fast::kinds` bits, mirrored here (the build script cannot use the crate).
const NULL: u8 = 1;
const BOOL: u8 = 2;
const NUMBER: u8 = 4;
const STRING: u8 = 8;
const ARRAY: u8 = 16;
const OBJECT: u8 = 32;
const ANY: u8 = 63;

/// Hand-written types (`protocol/src/custom.rs`) that deserialize from a string.
const STRING_CUSTOM: &[&str] = &[
    "AbsolutePathBuf",
    "ReasoningEffort",
    "ThreadId",
    "StrictAbsolutePath",
];

/// A check as a value: an inlined walker's `?` would otherwise leave the enclosing function
/// before the caller could look at its error.
fn contained(check: TokenStream) -> TokenStream {
    quote!((|s: &mut crate::fast::Scan, p: &mut JsonPath, out: &mut Vec<String>| -> crate::fast::R { #check })(s, p, out))
}

pub struct FastPlan {
    /// Types that get a `Fast` impl.
    pub reach: HashSet<usize>,
    /// Structs used as an internally tagged variant's newtype body (they get `fast_fields`).
    pub tagged: HashSet<usize>,
}

impl Emitter<'_> {
    /// The client request variants `(method, params type)` the fast path takes: exactly an
    /// `id` and a `params` field.
    pub(super) fn fast_requests(&self) -> Vec<(String, Ty)> {
        let Some(cr) = self.m.types.iter().find(|t| t.ident == "ClientRequest") else {
            return Vec::new();
        };
        let Kind::Enum { variants, .. } = &cr.kind else {
            return Vec::new();
        };
        variants
            .iter()
            .filter_map(|v| match &v.body {
                Body::Struct { fields, .. }
                    if fields.len() == 2
                        && fields.iter().all(|f| !f.flatten)
                        && fields[0].json == "id"
                        && fields[1].json == "params" =>
                {
                    Some((v.json.clone(), fields[1].ty.clone()))
                }
                _ => None,
            })
            .collect()
    }

    pub(super) fn fast_plan(&self) -> FastPlan {
        let mut reach = HashSet::new();
        let mut stack: Vec<Ty> = self.fast_requests().into_iter().map(|(_, t)| t).collect();
        stack.extend(self.m.server_responses.iter().map(|(_, n)| Ty::Named(*n)));
        while let Some(t) = stack.pop() {
            match t {
                Ty::Vec(i) | Ty::Map(i) | Ty::Opt(i) => stack.push(*i),
                Ty::Tuple(ts) => stack.extend(ts),
                Ty::Named(n) => {
                    if !reach.insert(n) {
                        continue;
                    }
                    match &self.m.types[n].kind {
                        Kind::Alias(t) => stack.push(t.clone()),
                        Kind::Struct { fields, .. } => {
                            stack.extend(fields.iter().map(|f| f.ty.clone()))
                        }
                        Kind::Enum { variants, .. } => {
                            for v in variants {
                                match &v.body {
                                    Body::Newtype(t) => stack.push(t.clone()),
                                    Body::Struct { fields, .. } => {
                                        stack.extend(fields.iter().map(|f| f.ty.clone()))
                                    }
                                    _ => {}
                                }
                            }
                        }
                    }
                }
                _ => {}
            }
        }
        let mut tagged = HashSet::new();
        for &n in &reach {
            if let Kind::Enum {
                repr: Repr::Internal(_),
                variants,
            } = &self.m.types[n].kind
            {
                for v in variants {
                    if let Body::Newtype(Ty::Named(t)) = &v.body {
                        tagged.insert(*t);
                    }
                }
            }
        }
        FastPlan { reach, tagged }
    }

    /// The JSON kinds a value of `t` could deserialize from (a superset is safe).
    fn kinds(&self, t: &Ty, depth: usize) -> u8 {
        if depth > 16 {
            return ANY;
        }
        match t {
            Ty::Str | Ty::Path => STRING,
            Ty::Bool => BOOL,
            Ty::Int(_) | Ty::Float(_) => NUMBER,
            Ty::Value => ANY,
            Ty::Unit => NULL,
            Ty::Vec(_) | Ty::Tuple(_) => ARRAY,
            Ty::Map(_) => OBJECT,
            Ty::Opt(i) => NULL | self.kinds(i, depth + 1),
            Ty::Custom(c) if STRING_CUSTOM.contains(&c.as_str()) => STRING,
            Ty::Custom(_) => ANY,
            Ty::Named(n) => match &self.m.types[*n].kind {
                Kind::Alias(t) => self.kinds(t, depth + 1),
                Kind::Struct { .. } => OBJECT | ARRAY,
                Kind::Enum { repr, variants } => match repr {
                    Repr::External => STRING | OBJECT,
                    Repr::Internal(_) => OBJECT | ARRAY,
                    Repr::Untagged => variants
                        .iter()
                        .map(|v| self.variant_kinds(&v.body, depth + 1))
                        .fold(0, |a, b| a | b),
                },
            },
        }
    }

    fn variant_kinds(&self, b: &Body, depth: usize) -> u8 {
        match b {
            Body::Unit => NULL,
            Body::Other => ANY,
            Body::Newtype(t) => self.kinds(t, depth),
            Body::Struct { .. } => OBJECT | ARRAY,
        }
    }

    /// Whether a missing field of type `t` is `None` rather than an error (an `Option`,
    /// seen through aliases).
    fn optional(&self, t: &Ty) -> bool {
        match t {
            Ty::Opt(_) => true,
            Ty::Named(n) => match &self.m.types[*n].kind {
                Kind::Alias(t) => self.optional(t),
                _ => false,
            },
            _ => false,
        }
    }

    /// A check of an open object's keys against `fields`: a block evaluating to `R`. In a
    /// tagged body, `tag` (in scope) is skipped once and unknown keys come last.
    fn fast_walker(&self, fields: &[Field], deny: bool, tagged: bool) -> TokenStream {
        if fields.iter().any(|f| f.flatten) {
            return quote!(Err(crate::fast::Bail));
        }
        let words = fields.len().div_ceil(64).max(1);
        let mut required = vec![0u64; words];
        let mut required_bits = vec![0u64; words];
        let arms: Vec<TokenStream> = fields
            .iter()
            .enumerate()
            .map(|(n, f)| {
                let must = match f.presence {
                    Presence::Default => false,
                    Presence::RequiredNullable => true,
                    Presence::Required => !self.optional(&f.ty),
                };
                if must {
                    required[n / 64] |= 1 << (n % 64);
                    required_bits[n / 64] |= 1 << (n % 64);
                }
                let json = &f.json;
                let seg = crate::segment::segment(json);
                let ty = self.fast_ty(f);
                quote!(#json => { seen.mark(#n)?; crate::fast::field::<#ty>(s, p, out, #seg)?; })
            })
            .collect();
        let tag_arm = tagged.then(|| {
            quote! {
                _ if k == tag => {
                    if tag_seen { return Err(crate::fast::Bail); }
                    tag_seen = true;
                    s.skip()?;
                }
            }
        });
        let unknown = if deny {
            quote!(return Err(crate::fast::Bail);)
        } else if tagged {
            quote! { unknown.add(k)?; s.skip()?; }
        } else {
            quote! { unknown.add(k)?; out.push(p.child(k)); s.skip()?; }
        };
        let tag_state = tagged.then(|| quote!(let mut tag_seen = false;));
        let report = tagged.then(|| quote!(unknown.report(p, out);));
        let words_lit = words;
        let required: Vec<TokenStream> = required.iter().map(|w| quote!(#w)).collect();
        // serde checks absent fields after the last key, in declaration order.
        let missing: Vec<TokenStream> = fields
            .iter()
            .enumerate()
            .filter(|(n, _)| required_bits[n / 64] & (1 << (n % 64)) != 0)
            .map(|(n, f)| {
                let json = &f.json;
                quote!(else if !seen.has(#n) { Err(s.missing(#json)) })
            })
            .collect();
        quote!({
            let mut seen = crate::fast::Seen::<#words_lit>::new();
            #[allow(unused_mut)]
            let mut unknown = crate::fast::Unknown::new();
            #tag_state
            let mut first = true;
            while let Some(k) = s.next_key(&mut first)? {
                match k {
                    #(#arms)*
                    #tag_arm
                    _ => { #unknown }
                }
            }
            #report
            // An expression, not `return`: the walker is also inlined in variant arms.
            if seen.has_all(&[#(#required),*]) { Ok(()) }
            #(#missing)*
            else { Err(crate::fast::Bail) }
        })
    }

    /// The type a field is checked as (its `Dflt` wrapper adds nothing to check).
    fn fast_ty(&self, f: &Field) -> TokenStream {
        self.rust_ty(&f.ty, false)
    }

    /// The `Fast` impl of a struct.
    pub(super) fn fast_struct(
        &self,
        name: &proc_macro2::Ident,
        fields: &[Field],
        deny: bool,
        tagged: bool,
    ) -> TokenStream {
        let plain = self.fast_walker(fields, deny, false);
        let expecting = format!("struct {}", name.to_string().trim_start_matches("r#"));
        let fields_fn = tagged.then(|| {
            let body = self.fast_walker(fields, deny, true);
            quote! {
                fn fast_fields(s: &mut crate::fast::Scan, p: &mut JsonPath, out: &mut Vec<String>, tag: &str) -> crate::fast::R {
                    #body
                }
            }
        });
        quote! {
            impl crate::fast::Fast for #name {
                fn fast(s: &mut crate::fast::Scan, p: &mut JsonPath, out: &mut Vec<String>) -> crate::fast::R {
                    match s.peek()? {
                        b'{' => {}
                        // Positional: the exact path.
                        b'[' => return Err(crate::fast::Bail),
                        _ => return Err(s.wrong(#expecting)),
                    }
                    s.obj_begin()?;
                    #plain
                }
                #fields_fn
            }
        }
    }

    /// The check of a newtype or struct variant's value at the cursor (not a tagged body).
    fn fast_value_body(&self, body: &Body) -> Option<TokenStream> {
        match body {
            Body::Newtype(t) => {
                let ty = self.rust_ty(t, false);
                Some(quote!(<#ty as crate::fast::Fast>::fast(s, p, out)))
            }
            Body::Struct { fields, deny } => {
                let w = self.fast_walker(fields, *deny, false);
                Some(quote!({ s.obj_begin()?; #w }))
            }
            _ => None,
        }
    }

    /// The `Fast` impl of an enum.
    pub(super) fn fast_enum(
        &self,
        name: &proc_macro2::Ident,
        repr: &Repr,
        variants: &[crate::model::Variant],
    ) -> TokenStream {
        // An internally tagged value is an object: its other keys can be dropped.
        let leaf = !matches!(repr, Repr::Internal(_))
            && variants.iter().all(|v| match &v.body {
                Body::Unit => true,
                Body::Newtype(t) => matches!(repr, Repr::Untagged) && super::is_leaf(t),
                _ => false,
            });
        let body = match repr {
            Repr::External => {
                let units: Vec<&String> = variants
                    .iter()
                    .filter(|v| matches!(v.body, Body::Unit))
                    .map(|v| &v.json)
                    .collect();
                let unit_match = if units.is_empty() {
                    quote!(Err(crate::fast::Bail))
                } else {
                    let units = units
                        .iter()
                        .map(|u| proc_macro2::Literal::byte_string(u.as_bytes()));
                    quote!(match v { #(#units)|* => Ok(()), _ => Err(crate::fast::Bail) })
                };
                let arms: Vec<TokenStream> = variants
                    .iter()
                    .filter_map(|v| {
                        let json = &v.json;
                        let seg = crate::segment::segment(json);
                        let check = contained(self.fast_value_body(&v.body)?);
                        // serde checks the map's length before the variant's body: an
                        // error inside is sure only with one key, so none is (bail).
                        Some(quote!(#json => {
                            p.seg(#seg);
                            if let Err(e) = #check { s.take_invalid(); return Err(e); }
                            p.pop();
                        }))
                    })
                    .collect();
                let object = (!arms.is_empty()).then(|| {
                    quote! {
                        b'{' => {
                            s.obj_begin()?;
                            let mut first = true;
                            let Some(k) = s.next_key(&mut first)? else { return Err(crate::fast::Bail) };
                            match k {
                                #(#arms)*
                                _ => return Err(crate::fast::Bail),
                            }
                            match s.next_key(&mut first)? {
                                None => Ok(()),
                                Some(_) => Err(crate::fast::Bail),
                            }
                        }
                    }
                });
                // Without struct variants a map is still a variant, or an error about its
                // length: the exact path.
                let map_bails = object
                    .is_none()
                    .then(|| quote!(b'{' => Err(crate::fast::Bail),));
                quote! {
                    match s.peek()? {
                        b'"' => {
                            let (v, escaped) = s.raw_str()?;
                            if escaped { return Err(crate::fast::Bail); }
                            #unit_match
                        }
                        #object
                        #map_bails
                        _ => Err(s.wrong("string or map")),
                    }
                }
            }
            Repr::Internal(tag) => {
                let arms: Vec<TokenStream> = variants
                    .iter()
                    .filter_map(|v| {
                        let json = &v.json;
                        let check = match &v.body {
                            Body::Unit => self.fast_walker(&[], false, true),
                            Body::Newtype(t) => {
                                let ty = self.rust_ty(t, false);
                                quote!(<#ty as crate::fast::Fast>::fast_fields(s, p, out, tag))
                            }
                            Body::Struct { fields, deny } => {
                                // A denying variant of a mixed enum is a newtype of its own.
                                let all_deny = all_deny(variants);
                                if *deny && !all_deny {
                                    let inner = deny_variant_ident(name, &v.ident);
                                    quote!(<#inner as crate::fast::Fast>::fast_fields(s, p, out, tag))
                                } else {
                                    self.fast_walker(fields, *deny, true)
                                }
                            }
                            Body::Other => return None,
                        };
                        Some(quote!(#json => #check,))
                    })
                    .collect();
                let expecting = format!(
                    "internally tagged enum {}",
                    name.to_string().trim_start_matches("r#")
                );
                quote! {
                    match s.peek()? {
                        b'{' => {}
                        // Positional: the exact path.
                        b'[' => return Err(crate::fast::Bail),
                        _ => return Err(s.wrong(#expecting)),
                    }
                    let start = s.mark();
                    s.obj_begin()?;
                    let variant = s.find_tag(#tag)?;
                    s.reset(start);
                    s.obj_begin()?;
                    let tag: &str = #tag;
                    match variant {
                        #(#arms)*
                        _ => Err(crate::fast::Bail),
                    }
                }
            }
            Repr::Untagged => {
                let tries: Vec<TokenStream> = variants
                    .iter()
                    .map(|v| {
                        let k = self.variant_kinds(&v.body, 0);
                        let check = match &v.body {
                            Body::Unit => quote!(s.null()),
                            Body::Other => quote!(Err(crate::fast::Bail)),
                            body => self.fast_value_body(body).unwrap_or_default(),
                        };
                        // An error inside a variant is no error of the enum's: its message
                        // is the untagged one, and a later variant might take the value.
                        let check = contained(check);
                        quote!(if #k & kind != 0 {
                            let r = #check;
                            if r.is_err() { s.take_invalid(); }
                            return r;
                        })
                    })
                    .collect();
                let name_str = name.to_string().trim_start_matches("r#").to_string();
                quote! {
                    let kind = crate::fast::kinds::of(s.peek()?);
                    #(#tries)*
                    // Every variant's kinds are a superset of what it takes: none takes this.
                    Err(s.untagged(#name_str))
                }
            }
        };
        let leaf = leaf.then(|| {
            quote!(
                const LEAF: bool = true;
            )
        });
        quote! {
            impl crate::fast::Fast for #name {
                #leaf
                #[allow(unused_variables)]
                fn fast(s: &mut crate::fast::Scan, p: &mut JsonPath, out: &mut Vec<String>) -> crate::fast::R {
                    #body
                }
            }
        }
    }

    /// `fast_params` / `fast_response`: the entry points by method.
    pub(super) fn fast_entries(&self) -> TokenStream {
        let req_arms: Vec<TokenStream> = self
            .fast_requests()
            .iter()
            .map(|(m, t)| {
                let ty = self.rust_ty(t, false);
                quote!(#m => (Some(#m), <#ty as crate::fast::Fast>::fast(s, p, out)))
            })
            .collect();
        let resp_arms: Vec<TokenStream> = self
            .m
            .server_responses
            .iter()
            .map(|(m, n)| {
                let ty = self.path_of(*n);
                quote!(#m => <#ty as crate::fast::Fast>::fast(s, p, out))
            })
            .collect();
        quote! {
            /// Fast check of a client request's non-null `params` (see `crate::fast`).
            pub fn fast_params(method: &str, s: &mut crate::fast::Scan, p: &mut JsonPath, out: &mut Vec<String>) -> (Option<&'static str>, crate::fast::R) {
                match method { #(#req_arms,)* _ => (None, Err(crate::fast::Bail)) }
            }
            /// Fast check of a client's `result` for a server request of `method`.
            pub fn fast_response(method: &str, s: &mut crate::fast::Scan, p: &mut JsonPath, out: &mut Vec<String>) -> crate::fast::R {
                match method { #(#resp_arms,)* _ => Err(crate::fast::Bail) }
            }
        }
    }
}
