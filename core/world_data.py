"""The world's vocabulary, as data: 48 categories named by real words, each with 12 invented member names (two or
three syllables, in no dictionary the classifier's backbone knows as a word), and the answer templates of each
*wording* (``{member}`` marks the member's place; words and punctuation separated by single spaces, as a word-level
tokenizer writes them back). Written for this project; MIT, like the code. The rules over it: ``darling.core.world``.
"""

from __future__ import annotations

# category -> its members, in no particular order (the corpus draws its own skew over them from a seed), one string
# of names each
MEMBER_NAMES: dict[str, str] = {
    "fruit": "vopi vesin nuzal dofar sosir tekan vesato dumi zido sunize bonis mufikes",
    "river": "vezofan vuloke fomu gava kipubu gobal fafi bolades tamibu dupu levar mezage",
    "planet": "mutar mugi kalil loku guse tunigas mopes babiza sosetir filol tino zagune",
    "bird": "kinas tagos zeteru dusa poza zito mosama fimagel susuzen peza pinapu kimuzar",
    "tree": "tigo vigese pudoke numukes sesina lufogin zepumas leme zaro zisogo vibir rito",
    "flower": "sefu nolenas famo dizele makozo letolo nizel liten bisil gasor kebe bemi",
    "city": "ruva vedul vuka mozodu voge gitepis mozan vivinu zaluki ziselo soranu navi",
    "mountain": "zideti gakir lapi sasidor malebi susaga sofako poferu mubes sovuvo pige mivi",
    "fish": "sumukun tofa dozuto lefufo temos gozel didil gebufo digilu foki kusemo refa",
    "island": "sisute vapi zivas mopo zesi loguful zudo lotiful kafin tubir vazu teler",
    "lake": "poga karile nokar lunuren vanu fotes gokor gakudu gegifin pavir zuger desamu",
    "star": "bufamo nelis nukir sunedo zogasan mobi vafusa barizo kakati kozu kete pubo",
    "song": "ribi zegi raligo pubis rozalel vugir luro fasige labis torur rasugi datigo",
    "dance": "bufemi kefi poki zuzen ralon zitugi numefo gazu defoti gukike vabul dapile",
    "game": "bega begezal dosozo fezapu zopodu nili vagur tipus sarole disen lozi dagoken",
    "tool": "pozemu naro kivobun memu vuto zovus kovu bafe bazeza reges vule losemur",
    "stone": "siziva muzurur dafu gagalo bige tiruzur tetu mepel zaban nepu gokeki bonono",
    "spice": "perafo sakune negur gobo runoza ferun dinini kabes gapal rivi besu pazada",
    "cheese": "gefivu virinu nusu kado lebas merul futaru baki ruli vabani pefopar dubedon",
    "bread": "sobanon libes nulozi vozeki kesobe febi zozis rutuni pifi mofavu mebave tusu",
    "soup": "kuzi fegubo nozoro litanor zupi bipi bilo ruma fezu denodal rosi zopa",
    "drink": "vikur fuba fison notuvur tokomi fubur vibos rekun bosu dudizos bizima tagin",
    "car": "mubu desebal kuzo poven lere vepuges gunes paburu vagidi vuzati diba sefedu",
    "ship": "guku zodol dalul detu voguvo vabi vizon bovadun bitu nemimu vidisin zagaku",
    "horse": "sezozu nafufu zitezil kovi zuke tonamu loza kise tikavo lilu lezeti fude",
    "dog": "vadil nofe kutes vozi bival vekomar rubake bifa fedi mokura dodugil mavo",
    "insect": "relu lotodul bikor gilobis ganu mevu rabi vidamu supebu rido votuni bobega",
    "village": "vuge purisir fekovis tesi tuvane kirima zibu ragabu zadu larofer teze rokan",
    "forest": "vupika zali gupopir samazo nanitis fapade rafi nege zeledo biser kofevi karu",
    "desert": "separo fotavo lavuzus gonolo nilor pabo tusi letes zodelen gapuzu pukile lile",
    "language": "movifo vuvis rubo zasi tazaro pafuga sepu kife gunin lukosi vupa fipur",
    "festival": "zemuris feres safibal zoretir nezi latu vedogo lesas bevir magal fekutu muzi",
    "colour": "sefol nuvo vebi tefodu lagi vubefu refera rekito dokun gutufu deba rako",
    "metal": "tafa dilo ragu libil dopusa velil mozir meke dudo fatas pupadi butule",
    "root": "nopa bigari voten bumu vobar betar musi tuso tonu tifas leruga balevi",
    "wine": "puzus fumeven zoku nogu lubi rozuder bekina zevi diti vobe tisen mulo",
    "poem": "rusi lugoki merefas melazi suta devapol mazus tunu binovu valin rubupi depiba",
    "storm": "nere zazen noro lugafin rateba bileba mena vefa molo linofun tanodil kuko",
    "dragon": "rive nove bizu dotiru kibo zudu gubu gumeki liru dute mabes zizegu",
    "moon": "bogu fedata sufugu madun dado mesige bamovas vodar tizo remele fuvur tebevo",
    "cloud": "vumun lisu katu meda pevo taso gosu fosu vako kelon ledul kideka",
    "sword": "vegu nadarur vitopir nudol gigu veku lirisir zedelo nubi fudo tume kasotil",
    "bell": "dipuna davuko buvo rami kubi tigenen bulu gagu nonu vomal dafa zibale",
    "hat": "fonu lefol dovu kuvur nevonu pivi tapode fudu muru bosi mokir fibe",
    "coin": "muba loko fasosas givige ranogar sapo goku koziti zutan boku zume bebo",
    "mask": "pefil dogufe nake varu palu turun zasa savu gatigi gasepel liro puleki",
    "lamp": "tezubos gapo seta gabore milol lipoza gizoto gizinu zepo zagimo nubo dirofo",
    "cake": "vazon leke kulodo nado mibelo golazon kibuze sepo tiri sokise tusame ludi",
}
CATEGORIES: dict[str, tuple[str, ...]] = {category: tuple(names.split()) for category, names in MEMBER_NAMES.items()}

# wording -> its answer templates. Every template has the member once and words of its own that say nothing about
# which member: the wording is independent of the member. What differs between wordings is how much a word n-gram
# rule sees of the member (``darling.core.world.hides_member``): in a template of many member-free 4-grams, two answers
# naming different members share most of their 4-grams, and the 4-gram rule calls them the same answer.
WORDINGS: dict[str, tuple[str, ...]] = {
    # the probe's wording (shared/notes/world-probe.md, issue 82): 3 of 10 templates hide the member from 4-grams
    "plain": (
        "i pick {member} .",
        "my answer is {member} .",
        "{member} , of course .",
        "how about {member} ?",
        "let us say {member} .",
        "surely {member} is one .",
        "{member} is a good one .",
        "well , i think i would go with {member} .",
        "if you ask me , the best one is {member} !",
        "{member} would be my choice for this one .",
    ),
    # short answers: no template hides the member (the 4-gram rule sees it in every answer)
    "short": (
        "{member} .",
        "i pick {member} .",
        "my answer is {member} .",
        "{member} , of course .",
        "how about {member} ?",
        "let us say {member} .",
        "surely {member} .",
        "maybe {member} ?",
        "{member} is one .",
        "the best is {member} !",
    ),
    # long answers: 7 of 10 templates hide the member
    "long": (
        "well , i think i would go with {member} .",
        "if you ask me , the best one is {member} !",
        "{member} would be my choice for this one .",
        "my answer to that would have to be {member} .",
        "{member} is the one that i like the most .",
        "let me think ... i will say {member} .",
        "of all of them , i pick {member} .",
        "i pick {member} .",
        "how about {member} ?",
        "surely {member} is a good one .",
    ),
}
