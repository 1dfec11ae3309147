//! `Fast` impls (see `runtime/src/fast.rs`): per type, a check straight on the line's bytes that is
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

/// Hand-written types (`runtime/src/custom.rs`) that deserialize from a string.
const STRING_CUSTOM: &[&str] = &[
    "AbsolutePathBuf",
    "ReasoningEffort",
    "ThreadId",
    "StrictAbsolutePath",
];

/// A name's `crate::names::Key`, its words computed here.
fn key(name: &str) -> TokenStream {
    let [a, z] = crate::names::words(name.as_bytes());
    quote!(crate::names::Key { name: #name, words: [#a, #z] })
}

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

    /// A check of an open object's keys against `fields`: a block evaluating to `R`, the
    /// fields as a static table for the one walker (`crate::fast::walk`). In a tagged body,
    /// `tag` (in scope) is skipped once and unknown keys come last.
    fn fast_walker(&self, fields: &[Field], deny: bool, tagged: bool) -> TokenStream {
        if fields.iter().any(|f| f.flatten) || fields.len() > 64 {
            return quote!(Err(crate::fast::Bail));
        }
        let mut required = 0u64;
        let entries: Vec<TokenStream> = fields
            .iter()
            .enumerate()
            .map(|(n, f)| {
                let must = match f.presence {
                    Presence::Default => false,
                    Presence::RequiredNullable => true,
                    Presence::Required => !self.optional(&f.ty),
                };
                if must {
                    required |= 1 << n;
                }
                let json = &f.json;
                let seg = crate::segment::segment(json);
                let ty = self.fast_ty(f);
                let key = key(json);
                quote!(crate::fast::Field {
                    key: #key,
                    seg: #seg,
                    check: <#ty as crate::fast::Fast>::fast,
                    leaf: <#ty as crate::fast::Fast>::LEAF,
                })
            })
            .collect();
        let names: Vec<&str> = fields.iter().map(|f| f.json.as_str()).collect();
        let slots = crate::names::layout(&names);
        let tag = if tagged {
            quote!(Some(tag))
        } else {
            quote!(None)
        };
        // An inline const, not a static: a type shared by several versions is generic over
        // them (`emit::emit_all`), and only a const can name its parameter.
        quote!({
            let fields: &'static crate::fast::Fields = const { &crate::fast::Fields {
                fields: &[#(#entries),*],
                slots: &[#(#slots),*],
                required: #required,
                deny: #deny,
            } };
            crate::fast::walk(s, p, out, fields, #tag)
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

    /// `fast_params` / `fast_response`: the entry points by method, found through a hashed
    /// table of `(method, check)` (see `crate::names`).
    pub(super) fn fast_entries(&self) -> TokenStream {
        let requests = self.fast_requests();
        let req_names: Vec<&str> = requests.iter().map(|(m, _)| m.as_str()).collect();
        let req_slots = crate::names::layout(&req_names);
        let req_entries: Vec<TokenStream> = requests
            .iter()
            .map(|(m, t)| {
                let ty = self.rust_ty(t, false);
                let key = key(m);
                quote!((#key, <#ty as crate::fast::Fast>::fast as crate::fast::Check))
            })
            .collect();
        let responses = &self.m.server_responses;
        let resp_names: Vec<&str> = responses.iter().map(|(m, _)| m.as_str()).collect();
        let resp_slots = crate::names::layout(&resp_names);
        let resp_entries: Vec<TokenStream> = responses
            .iter()
            .map(|(m, n)| {
                let ty = self.path_of(*n);
                let key = key(m);
                quote!((#key, <#ty as crate::fast::Fast>::fast as crate::fast::Check))
            })
            .collect();
        let (nq, nr) = (req_entries.len(), resp_entries.len());
        let (sq, sr) = (req_slots.len(), resp_slots.len());
        quote! {
            static FAST_PARAMS: [(crate::names::Key, crate::fast::Check); #nq] = [#(#req_entries),*];
            static FAST_PARAMS_SLOTS: [u16; #sq] = [#(#req_slots),*];
            static FAST_RESPONSE: [(crate::names::Key, crate::fast::Check); #nr] = [#(#resp_entries),*];
            static FAST_RESPONSE_SLOTS: [u16; #sr] = [#(#resp_slots),*];
            /// Fast check of a client request's non-null `params` (see `crate::fast`).
            pub fn fast_params(method: &str, s: &mut crate::fast::Scan, p: &mut JsonPath, out: &mut Vec<String>) -> (Option<&'static str>, crate::fast::R) {
                match crate::names::find(&FAST_PARAMS_SLOTS, &FAST_PARAMS, |e| &e.0, method) {
                    Some((_, &(key, check))) => (Some(key.name), check(s, p, out)),
                    None => (None, Err(crate::fast::Bail)),
                }
            }
            /// Fast check of a client's `result` for a server request of `method`.
            pub fn fast_response(method: &str, s: &mut crate::fast::Scan, p: &mut JsonPath, out: &mut Vec<String>) -> crate::fast::R {
                match crate::names::find(&FAST_RESPONSE_SLOTS, &FAST_RESPONSE, |e| &e.0, method) {
                    Some((_, &(_, check))) => check(s, p, out),
                    None => Err(crate::fast::Bail),
                }
            }
        }
    }
}
