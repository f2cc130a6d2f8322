"""More of how pupils say distress: phrases of each category beside `phrases._BUILTIN`, in the same
form (regular expressions over folded words, the child speaking of themselves), written for the
wordings of West African classrooms and SMS (« chicotte », « la dot », « tonton », « tantie », a
deuxième femme, the « notes sexuellement transmissibles » a teacher trades) and their English.

Kept apart so that neither module outgrows a screenful of categories; `phrases.load_phrases` reads
both, the built-in list first.
"""

from __future__ import annotations

__all__ = ["A_TEST", "MORE"]

# « ... mdr », « c'est pour rire », a game: not the child's distress.
_NOT_JOKING = (r"(?!.*\b(?:mdr|lol|ptdr|rigole|blague|haha\w*|hihi\w*|mort de rire|jeu|cartes|dames|echecs|"
               r"fifa|match|partie|mario|console)\b)")
# A question on a text or a translation is not the child's own words.
_OWN_WORDS = (r"^(?!.*\b(?:personnage|figure de style|scene|citation|traduis\w*|translate|heroine|heros|"
              r"poeme|roman|narrateur|auteur|novel|character|story|histoire de|livre|film|chapitre|"
              r"dissertation|expose|redaction|essay)\b).*")
# What a teacher « tape » when it is a test set without warning (« le prof nous a tapé un devoir
# surprise »), not a blow: read after the verb by both phrase lists.
A_TEST = r"une? (?:devoir|interro\w*|controle|test|exo\w*|dictee|compo\w*|evaluation)\b"
# Who hits at school, and how it is said.
_TEACHER = (r"(?:maitre|maitresse|prof|profs|professeur\w*|directeur|directrice|surveillant\w*|censeur|"
            r"enseignant\w*|instit\w*|educateur|encadreur|proviseur|repetiteur)")
_HIT = (r"(?:frappe\w*|tape|tapent|tapait|tapaient|tapee?s?|gifle\w*|chicott?\w*|fouett?\w*|battu\w*|bat|"
        r"battent|cogne\w*|tabass\w*|bastonn\w*|blesse\w*|pince\w*|donne des (?:coups|gifles)|"
        r"tire (?:l oreille|les oreilles)|fait mettre a genoux|mise? a genoux)")
_ADULT_AT_HOME = (r"(?:pere|mere|papa|maman|maratre|belle mere|beau pere|tutrice|tuteur|tante|oncle|tonton|"
                  r"tata|tantie|vieux|vieille|daron|daronne|grand pere|grand mere|parents|marraine|parrain)")

MORE: dict[str, tuple[str, ...]] = {
    "self_harm": (
        r"\bj ai achete (?:des lames|une lame|du poison|de la mort aux rats|des cachets|une corde)\b",
        r"\bme laisser mourir\b|\b(?:je|j|me)\b.{0,40}\bpour (?:mourir|en finir|ne plus me reveiller)\b"
        r"(?! de)",
        rf"\b(?:la|ma) vie ne vaut (?:pas|rien|plus rien)\b|\bma vie (?:ne sert a rien|est inutile|est finie"
        rf"|c est fini|est fichue|est foutue)\b{_NOT_JOKING}",
        r"\barreter de vivre\b|\bstop living\b|\b(?:plus|pas) (?:de )?gout a (?:la vie|rien)\b"
        r"|\bsi (?:je|j) (?:mourais|disparaissais|etais mort\w*|n etais plus la)\b",
        r"\b(?:feel|felt) like (?:dying|killing myself|ending it)\b|\bi (?:can t|cannot|can not) (?:take it|"
        r"live like this) anymore\b|\bme suis (?:taille|coupe|ouvert)\w* les veines\b",
        r"\bje (?:ne )?(?:veux|veut|vx) plus (?:etre|rester) (?:la|ici|sur terre|dans ce monde|en vie)\b"
        r"|\b(?:envie|envi) de (?:disparaitre|partir pour toujours|ne plus exister|ne plus etre la)\b",
        r"\bje me (?:frappe|tape|cogne) la tete contre\b|\b(?:automutil|auto mutil)\w*\b|\boverdose\b"
        r"|\bi should (?:just )?(?:die|kill myself|disappear)\b",
        r"\bje veux (?:juste )?(?:dormir|partir|disparaitre) et (?:ne plus|ne jamais|jamais) (?:me reveiller"
        r"|revenir)\b|\b(?:disparaitre|mourir) pour de bon\b",
        r"\bje (?:ne )?(?:supporte|tiens|peux) plus\b.{0,30}\b(?:vivre|la vie|ma vie|exister|rester en "
        r"vie)\b",
        r"\b(?:lame|rasoir)\b.{0,30}\b(?:mes bras|mes poignets|mes veines|mes cuisses|my arms|my wrists)\b",
        r"\bje (?:veux|vais|voudrais) (?:rejoindre|retrouver) (?:papa|maman|mon pere|ma mere|grand mere|grand"
        r" pere|mamie|papi)\b.{0,20}\b(?:au ciel|la haut|dans la tombe|mort\w*|decede\w*)\b",
        r"\bi (?:want|need|wish) to (?:disappear|sleep forever|not exist|stop existing)\b",
        r"\bmieux vaut (?:que )?(?:je|j) (?:creve|meure|meurs|disparaisse|sois mort\w*)\b"
        r"|\bje (?:devrais|merite de) (?:mourir|disparaitre)\b",
        r"\b(?:vais|veux|ai) (?:avaler|avale) (?:les|tous les|toutes les|mes|ses) (?:medicaments|cachets|"
        r"comprimes|pilules)\b",
        r"\bpourquoi (?:je vis|je suis) encore (?:en vie|vivant\w*|la|sur terre)?\b"
        r"|\bpersonne ne (?:pleurera|me regrettera|remarquera)\b",
        rf"{_OWN_WORDS}\bje me (?:tue|tuerai|suicide|suicider\w*)\b(?! (?:a|au|pour) )(?! de rire"
        rf"){_NOT_JOKING}",
        rf"\b(?:envie de|veux|vais|voudrais|pense a) me (?:tue|tuer)\b{_NOT_JOKING}",
        r"\bje me brule\w* (?:avec (?:des |une |un |la |le )?(?:cigarette|briquet|allumette|fer)\w*|expres"
        r"|les bras|la peau|chaque)\b",
        r"\b(?:pris|prendre|avale\w*|avaler|bu|boire) (?:\d+|plein de|beaucoup de|une boite de|la boite de)"
        r" (?:comprimes|cachets|pilules|medicaments|paracetamol)\b",
        r"\bcombien de (?:comprimes|cachets|pilules|medicaments)\b.{0,40}\b(?:mourir|mort|tuer|en finir)\b",
        rf"{_OWN_WORDS}\b(?:comment|cmt) (?:on fait pour |faire pour |je peux )?(?:mourir|me tuer|se tuer|"
        r"me suicider|se suicider|en finir)\b(?! (?:de|d) )",
        r"\bmourir sans (?:avoir )?(?:mal|souffrir)\b|\bdie without (?:pain|suffering)\b",
        r"\b(?:cachets|comprimes|medicaments|poison|lame|corde|produit)\b.{0,30}\bpour (?:ce soir|mourir|"
        r"en finir|me tuer)\b",
        r"\b(?:drank|drink|swallowed|took|take|taking) (?:\d+ |all (?:the |my )?|a lot of |some )?(?:bleach|"
        r"poison|pills|tablets|rat poison)\b.{0,20}\b(?:die|dying|end it|to sleep forever)\b"
        r"|\bi (?:drank|swallowed) (?:bleach|poison)\b",
        r"\bi (?:will not|won t|will no longer) be (?:here|alive|around)\b",
        r"\b(?:je ne serai|je serai|je serais) plus (?:en vie|de ce monde)\b",
        rf"{_OWN_WORDS}\bje (?:serai|serais) (?:mort|morte)\b(?! de)(?!.*\b(?:si|quand|sinon)\b"
        rf"){_NOT_JOKING}",
        r"\b(?:adieu|goodbye) (?:a tous|tout le monde|everyone|forever|pour toujours|maman|papa|mum|mom)\b"
        r"|\b(?:c est )?mon dernier message\b|\bmy last message\b",
        r"\b(?:j ai|je) (?:deja )?(?:essaye|tente) de me (?:tuer|suicider|pendre|noyer|jeter|empoisonner)\b"
        r"|\b(?:j ai|je) (?:deja )?(?:essaye|tente) de m (?:etrangler|empoisonner)\b"
        r"|\b(?:tried|try|trying) to (?:kill myself|hang myself|end my life|end it|die|overdose)\b",
        r"\bje (?:prefere|preferais|prefererais) (?:mourir|crever|etre mort\w*)\b(?! de (?:rire|faim))"
        rf"{_NOT_JOKING}",
        r"\b(?:vaut )?mieux (?:que |ke )?(?:je|j) (?:creve|meure|meurs|disparaisse|sois mort\w*)\b",
        r"\bje pense (?:a la mort|a mourir|a me tuer|au suicide|a en finir)\b",
        r"\bme (?:jeter|jette|lancer) (?:du|d un|de l|de la|sous|dans|par|devant) (?:\w+ ){0,3}(?:pont|toit|"
        r"immeuble|etage|fleuve|puits|lagune|voiture|train|fenetre|mer|riviere|camion|falaise|gbaka|woo"
        r"ro)\w*",
        r"\b(?:sauter|saute) (?:du|d un|de l|de la|par la) (?:\w+ ){0,2}(?:pont|toit|immeuble|etage|fenetre|"
        r"falaise)\w*",
        r"\b(?:plus|pas|pu) la force de (?:vivre|continuer|me battre)\b|\bje (?:ne )?(?:veux|vx) plus e"
        r"xister\b",
        r"\b(?:je|j) (?:ne )?(?:sers|vaux) (?:a|plus) rien\b.{0,30}\b(?:mourir|mort|disparaitre|partir)\b",
        r"\b(?:i|i am|i m) (?:thinking|think) (?:about|of) (?:ending it|killing myself|suicide)\b"
        r"|\b(?:i|i just) (?:do not|don t) want to (?:be here|exist) anymore\b|\b(?:want|going) to end it\b"
        r"|\bcommit suicide\b|\bwant to (?:jump|throw myself) (?:off|from|in)\b",
        r"\bme (?:tailler|couper|ouvrir) les veines\b|\bouvert les veines\b|\bslit my wrists?\b",
        r"\b(?:corde|rope)\b.{0,30}\b(?:pendre|hang|cou|neck)\b",
    ),
    "sexual_abuse": (
        r"\b(?:prof\w*|maitre|directeur|surveillant|tonton|patron|pasteur|marabout|repetiteur|oncle)\b.{0,40}"
        r"\b(?:sa (?:copine|petite amie|go|cherie|maitresse)|son (?:amante?|copain))\b",
        r"\bme fait la cour\b|\bma (?:note|moyenne) depend de (?:moi|ca)\b"
        r"|\b(?:qu on fait|qu on fasse|faire) (?:les choses|le ndolo|ca)\b.{0,30}\b(?:pour que je passe|"
        r"pour passer|note|moyenne|sinon)\b|\bsi (?:je|j) (?:viens|vais|passe) chez (?:lui|elle)\b",
        r"\bnotes? sexuellement transmissibles?\b|\b(?:sexe|faveurs?|coucher) contre (?:des |les |de bonnes"
        r" )?(?:notes|points|moyenne)\b|\b(?:notes?|points|moyenne)\b.{0,30}\ben echange d\b",
        r"\b(?:me fait|m a fait|me faisait|me font) (?:des )?(?:avances|propositions|attouchements)\b",
        r"\b(?:prof\w*|maitre|directeur|surveillant|tonton|oncle|patron|pasteur|imam|marabout|homme|monsieur|"
        r"adulte|repetiteur|chauffeur|voisin|beau pere|cousin)\b.{0,40}\b(?:veut|voulait|demande|exige|oblige"
        r"|force|dit) (?:que je |de |a |me )?(?:sortir|coucher|dormir|faire l amour|faire des choses)"
        r" (?:avec (?:moi|lui)|ensemble)\b",
        r"\b(?:main|mains|doigts) (?:sur|dans|sous) (?:ma|mes|mon) (?:cuisses?|poitrine|culotte|slip|seins|"
        r"fesses|jupe|pagne|corps)\b|\b(?:touche|toucher|caresse\w*|tripote\w*) (?:ma|mes) (?:cuisses?|"
        r"poitrine|seins|fesses|parties|corps)\b",
        r"\b(?:il|elle|mon oncle|mon cousin|mon beau pere|tonton|le gardien)\b.{0,20}\b(?:entre|vient|rentre"
        r"|venait) dans (?:ma chambre|mon lit|la douche)\b.{0,30}\b(?:la nuit|le soir|quand|me toucher)\b",
        r"\bnotre (?:petit )?secret\b|\b(?:dis|dire|raconter) (?:rien|pas) a (?:tes|mes|ta|ma) (?:parents|"
        r"mere|maman|pere|papa)\b|\bour (?:little )?secret\b|\b(?:do not|don t) tell (?:your|my) parents\b",
        r"\b(?:me donne|me paie|me paye|m offre|m a donne|m a offert) (?:de l argent|des cadeaux|un telephone"
        r"|des sous|\d+ ?(?:f|francs|mille))\b.{0,40}\b(?:si|pour que|contre|en echange|pour)\b.{0,20}\b(?:"
        r"coucher|sortir|toucher|photos?|seule?|chez lui|dormir|l embrasser)\b",
        r"\b(?:photos?|videos?|pics?|pictures?)\b.{0,20}\b(?:nue?s?|toute nue|tout nu|sans (?:habits|"
        r"vetements|rien)|en (?:sous vetements|culotte|slip|soutien gorge|serviette)|naked|sexy|of my body"
        r"|in my underwear)\b",
        r"\b(?:asked|asks|wants|forced|forces|told) me to (?:send|show|take off|undress|touch)\b",
        r"\b(?:touch|touched|touches|touching|grabbed|grabs) my (?:private|body|breasts?|chest|thighs?|"
        r"bum|butt|bottom)\b|\bsex (?:for|in exchange for) (?:grades|marks|money)\b",
        r"\b(?:meet|see) (?:me )?(?:up )?(?:in secret|alone|without my parents|at (?:his|a) hotel)\b"
        r"|\b(?:rencontrer|voir|retrouver) (?:en secret|seule?|a l hotel|dans (?:un|son) hotel|sans (?:"
        r"tes|mes)"
        r" parents)\b",
        r"\b(?:viens?|venir|passer) (?:seule? )?(?:chez (?:lui|moi)|dans son bureau|a son bureau)\b.{0,30}"
        r"\b(?:note|notes|moyenne|seule?|le soir|la nuit)\b",
        r"\b(?:m a|ma|m ont|on m a) (?:deshabill\w*|embrass\w* de force|force\w* a (?:coucher|me deshabiller"
        r"|l embrasser))\b|\bme (?:deshabiller|mettre nue?)\b",
    ),
    "abuse_home": (
        r"\b(?:ma|mon) (?:mere|pere|maratre|tante|oncle|tutrice|tuteur|belle mere|beau pere)\b.{0,30}"
        r"\b(?:me traite de|dit que je suis) (?:sorcier\w*|demon|diable|bon a rien|une malediction)\b",
        r"\bm (?:a|ont) casse (?:le bras|la jambe|une dent|les dents|le nez|la tete|le dos)\b"
        r"|\bpiment dans (?:les|mes) yeux\b",
        rf"\b{_ADULT_AT_HOME}\b(?: \w+){{0,3}} (?:me|m a|ma|m ont|nous) (?:encore )?(?:frappe\w*|tape\w*|"
        r"bat|battu\w*|brule\w*|fouette\w*|chicott?\w*|cogne\w*|gifle\w*|tabass\w*|etrangle\w*|blesse\w*|"
        rf"maltrait\w*|bastonn\w*|enferme\w*|attache\w*)\b(?! (?:aux|au|a|en) (?!la maison|cause)"
        rf"){_NOT_JOKING}",
        r"(?<!je )(?<!tu )\bme (?:maltrait\w*|gifle\w*|bastonn\w*)\b|\bje suis maltrait\w*\b"
        r"|\bmaltrait\w* (?:a la maison|chez moi)\b",
        r"\b(?:marques|traces|bleus|cicatrices|blessures) (?:de coups|de ceinture|de fouet|de chicotte|de"
        r" brulure|de cable|de baton)\b|\bcouvert\w* de bleus\b",
        r"\b(?:me|m) (?:laisse\w*|prive\w*) (?:sans manger|de manger|de nourriture)\b|\bpas mange depuis \d+"
        r" jours\b|\bme (?:met|mettent|mets) a genoux (?:toute|pendant|au soleil)\b",
        r"\b(?:m enferme\w*|m attache\w*|me ligot\w*)\b(?! (?:les cheveux|mes cheveux|le lacet))",
        r"\b(?:he|she|they|dad|mom|mum|father|mother|uncle|aunt|stepmother|stepfather|stepmom|stepdad|"
        r"parents|grandma|grandpa|guardian) (?:slaps|slapped|whips|whipped|punches|punched|chokes|choked|"
        r"locks|locked|starves|starved|burns|burned|burnt|beats|beat|hits|hit|kicks|kicked|flogs|flogged)"
        r" me\b(?! (?:at|in) (?:chess|cards|games?|football|running|a race))",
        r"\b(?:bruises|marks|scars) from (?:the |his |her |my )?(?:belt|beating|stick|whip|cane|cable)\b"
        r"|\babuses me at home\b|\b(?:beaten|whipped|flogged) at home\b",
    ),
    "threats": (
        r"\b(?:msg|messages?|ecrit|ecrivent|dit|disent|texto|sms)\b.{0,30}\bque (?:je|j) (?:vais|vas) m"
        r"ourir\b"
        r"(?! de)|\b(?:dit|ecrit|crie)\b.{0,20}\bje vais te (?:tuer|planter|egorger|bruler|frapper)\b",
        r"\b(?:m attend|m attendra\w*|va m attendre|vont m attendre|m attendent)\b.{0,30}\b(?:sortie|dehors|"
        r"couteau|machette|arme|baton|gourdin)\b",
        r"\b(?:bruler|incendier|bruleront|brulera|brule|mettre le feu a) (?:ma|notre|la) (?:maison|case|"
        r"chambre)\b",
        r"\b(?:kidnapp\w*|enlev\w*|tuer|faire du mal a|s en prendre a|frapper|violer) (?:ma|mon|mes) (?"
        r":soeur|"
        r"frere|famille|mere|pere|maman|papa|parents|petite soeur|petit frere)\b",
        rf"\bsi (?:je|j) (?:parle|dis|le dis|denonce|raconte|en parle|le denonce|previens)\b.{{0,40}}\b"
        rf"(?:tuer|"
        rf"tuera|frapper|mort|regretter|regretteras|bruler|faire du mal|planter|tabasser)\w*{_NOT_JOKING}",
        rf"\bif i (?:tell|talk|speak|report|say anything)\b.{{0,40}}\b(?:kill|hurt|beat|regret|stab|burn)\w*"
        rf"{_NOT_JOKING}",
        r"\b(?:hurt|kill|burn|stab|kidnap) my (?:family|sister|brother|mother|mom|mum|father|dad|little)\b",
        r"\bme (?:fait|font) des menaces\b|\bil me menace\b|\b(?:threatened|threatening) me\b",
        rf"\b(?:il|elle|ils|on|quelqu un) (?:va|vont|veut|veulent) me (?:faire la peau|regler mon compte|"
        rf"faire payer|tuer)\b{_NOT_JOKING}",
        r"\b(?:quelqu un|un homme|un inconnu|des gens|un monsieur|ils|il) me (?:suit|suivent|suivait|guette"
        r"|guettent)\b|\bsomeone (?:is )?(?:following|stalking) me\b",
    ),
    "forced_marriage": (
        r"\b(?:demander|demande|demandent|demande\w*) ma main\b|\b(?:ont|a) (?:accepte|organise|prepare|fixe"
        r"|decide)\w* (?:le|ce) mariage\b|\bmarried off\b|\b(?:asked for|came for) my hand\b",
        r"\b(?:mariee?|epousee?) (?:a|avant) (?:\d{1,2}|onze|douze|treize|quatorze|quinze) ans\b",
        rf"\b(?:veut|veulent|voulait) (?:m epouser|se marier avec moi)\b|\bwants? to marry me\b{_NOT_JOKING}",
        r"(?<!je )\b(?:veut|veux|veulent|vont|va|voulait|voulaient|vx|veule) (?:me|m) "
        r"(?:marier|marie\w*|donner en"
        r" mariage|donne en mariage|donner a)\b|\bque (?:je|j) (?:me )?marie\b(?! (?:un jour|plus tard|"
        r"quand))",
        r"\bm (?:a|ont) trouve un mari\b|\btrouve un mari pour moi\b|\b(?:aller|partir|vivre|envoyer) chez"
        r" (?:mon|le|son) (?:mari|futur mari)\b|\bmon (?:mari|epoux)\b(?! (?:ideal|de reve))",
        r"\b(?:j ai|je n ai que|alors que j ai) (?:\d{1,2}|onze|douze|treize|quatorze|quinze|seize) an"
        r"s\b.{0,50}"
        r"\b(?:mari\w*|epous\w*|noces|dot)\b|\b(?:mari\w*|epous\w*|noces|dot)\b.{0,50}\b(?:j ai|alors q"
        r"ue j ai"
        r"|je n ai que) (?:\d{1,2}|onze|douze|treize|quatorze|quinze|seize) ans\b",
        r"\bmy (?:parents|father|dad|family|uncle|mother|mom) (?:want|wants|have decided|decided|say|says)"
        r" (?:me to|that i|i must|i have to)\b.{0,20}\bmarr|\bdowry\b.{0,30}\b(?:for me|my)\b|\bmarry m"
        r"e off\b",
        r"\bdecide\w* de me (?:marier|donner)\b|\b(?:mon|le) futur mari\b|\b(?:je suis|on m a) (?:fiancee?|"
        r"promise?)\b",
        r"^(?!.*\b(?:expose|redaction|dissertation|devoir|sujet|essay|argument\w*|texte|roman|histoire|"
        r"loi)\b)"
        r".*\b(?:mon|me|moi|je|my|i)\b.{0,30}\b(?:mariage (?:force|precoce|arrange)|(?:forced|arranged|early)"
        r" marriage)\b",
        r"\b(?:ne veux|veux|want) (?:pas|not) (?:epouser|de ce mari|de cet homme|de ce vieux|l epouser|"
        r"to marry"
        r" him)\b",
        r"\b(?:they|my parents|my father|my family|my dad|my uncle) (?:are|is) (?:marrying me|making me"
        r" marry|"
        r"giving me (?:to|away))\b|\bmy (?:future )?husband is (?:\d+|old|older)\b|\bi (?:m|am) (?:engaged|"
        r"promised) to\b",
        r"\bmes noces\b|\b(?:on|ils|elles|mes parents) me (?:marie|marient)\b",
        rf"{_OWN_WORDS}\b(?:je vais|je dois|on va me faire|veut me faire|veulent me faire|oblige\w* a|"
        r"force\w* a|obliger a|forcer a|on m oblige a|on me force a) (?:epouser|me marier)\b"
        r"(?! (?:un jour|plus tard|quand je))",
        rf"{_OWN_WORDS}\b(?:devenir|etre|que je devienne|que je sois) (?:sa|la) (?:deuxieme|troisieme|"
        r"quatrieme|2e|3e|4e|seconde|nouvelle|petite)? ?(?:femme|epouse|coepouse)\b",
        r"\b(?:je|j|moi|me)\b.{0,40}\b(?:deuxieme|troisieme|quatrieme|2e|3e|4e|seconde) (?:femme|epouse)\b",
        r"\bme donne\w* en mariage\b|\bm (?:a|ont) donnee? (?:a|en mariage)\b|\b(?:je|j) (?:suis|serai)"
        r" (?:promise?|donnee?) (?:a|en mariage)\b",
        r"\bmon (?:propre )?mariage\b(?! (?:ideal|de reve|plus tard|un jour))",
        r"\b(?:le|un) mari (?:qu ils|que mes parents|que mon pere|que ma mere|que ma famille|choisi)\b",
        r"\btrop (?:jeune|petite) pour (?:me marier|le mariage|etre mariee?|un mari|epouser)\b"
        r"|\btoo young to (?:marry|be married|get married)\b",
        r"\b(?:arreter|quitter) l ecole pour (?:me marier|le mariage|mon mariage|aller chez mon mari)\b",
        r"\b(?:i have to|i must|they want me to|make me|forcing me to|i am going to be|i will be|they will)"
        r" (?:marry|be married|get married|marry me)\b",
        r"\b(?:be|become) his (?:second|third|fourth|new|young) wife\b|\b(?:second|third|fourth) wife\b",
        r"\bmy (?:father|dad|parents|family|uncle|mother|mom) (?:sold|promised|gave) me\b"
        r"|\bm (?:a|ont) (?:vendue?|promise?)\b",
        r"\b(?:marier|epouser|marie\w*) (?:a|avec) (?:un|le|ce|mon|son) (?:vieux|vieil|homme|monsieur|cousin|"
        r"ami de|commercant|tonton|chef|imam|riche|papa)\b",
    ),
    "school_violence": (
        r"\b(?:sorti|sortent|amene|apporte|sort)\w* (?:des|un|une) (?:couteaux?|machettes?|armes?|pistolets?)"
        r"\b.{0,40}\b(?:ecole|classe|cour|college|lycee)\b",
        rf"\b{_TEACHER}\b(?: \w+){{0,4}} {_HIT} avec (?:le|la|un|une|des|son|sa) (?:cable|chicotte|foue"
        rf"t|baton|"
        r"regle|ceinture|cravache|bois|branche|liane)\b",
        rf"\b{_TEACHER}\b(?: \w+){{0,4}} (?:me|m a|ma|nous|nous a|m ont|nous ont|m|les|l a) (?:encore )?"
        rf"{_HIT}\b(?! (?:sur les nerfs|sur (?:l )?l?epaule|une \w* ?note|une note|dans le dos|la main|"
        rf"dans la main|dans les mains|{A_TEST})){_NOT_JOKING}",
        rf"\b{_TEACHER}\b(?: \w+){{0,4}} (?:{_HIT}) (?:les eleves|tout le monde|tous les eleves|les enfants|"
        rf"mes camarades|mon camarade|un eleve|une eleve|les retardataires|les filles|les garcons|ceux "
        rf"qui)\b",
        rf"\b(?:coups?|chicotte|fouet|cravache|baton|cable|ceinture|gifles?) (?:du|de la|des|de notre|de mon)"
        rf" {_TEACHER}\b",
        rf"\b(?:a l ecole|en classe|au college|au lycee)\b.{{0,30}}\b(?:on nous|on me|ils nous|ils me)"
        rf" {_HIT}\b"
        rf"|\b(?:on|ils) (?:nous|me) {_HIT}\b.{{0,30}}\b(?:a l ecole|en classe|au college|au lycee)\b",
        r"\b(?:a genoux|agenouill\w*)\b.{0,30}\b(?:soleil|cailloux|graviers|pierres|capsules|tessons)\b",
        r"\b(?:teacher|teachers|headmaster|headteacher|principal|master|madam|sir)\b(?: \w+){0,4} (?:hits?|"
        r"beats?|slapped|slaps|whips?|whipped|canes?|caned|flogs?|flogged|punched|kicked|pinched|hurts?)"
        r" (?:me|us|students|pupils|kids|children|everyone|my|the class)\b",
        r"\b(?:caned|flogged|whipped|beaten|slapped) (?:at|in) (?:school|class)\b|\b(?:get|got|getting|"
        r"were|was) (?:caned|flogged|whipped)\b",
    ),
    "bullying": (
        r"\b(?:m appellent|m appelle|me traitent|me surnomment) (?:le |la |l )?(?:singe|sorcier\w*|gros\w*|"
        r"moche|chien|cochon|nain|gorille|bizarre|folle?|albinos|handicape\w*)\b"
        r"|\b(?:que|qu) (?:je|j) (?:devrais|devrai|dois) (?:mourir|me tuer|disparaitre)\b",
        r"\b(?:on|ils|elles|tout le monde|les autres) (?:me|m) (?:rejette\w*|exclu\w*|evite\w*|bouscul\w*|"
        r"humili\w*|menace|menacent|frappe\w* a la sortie|rackett\w*)\b",
        r"\b(?:ils|elles|on) (?:m appellent|m appelle) (?:le |la )?\w+\b.{0,30}\b(?:rire|moquer|tout le monde"
        r"|personne)\b",
        r"\b(?:rumeurs?|montages?|memes?) (?:sur moi|de moi)\b|\b(?:rumours?|memes?) about me\b",
        r"\b(?:cyber ?harcel\w*|cyberbull\w*)\b.{0,30}\b(?:moi|me|je|i)\b|\b(?:je|j) (?:subis|vis) du "
        r"(?:cyber ?)?harcelement\b",
        r"\bpeur d aller (?:a l ecole|en classe)\b.{0,40}\b(?:harcel\w*|moqu\w*|insult\w*|frapp\w*|eleves"
        r"|camarades)\b",
        r"\b(?:everyone|they|kids|classmates) (?:ignores?|excludes?|laughs? at|insults?|pushes?|hits?|calls?)"
        r" me\b",
    ),
    "runaway": (
        r"\bdors chez des (?:gens|inconnus)\b|\bm (?:a|ont) laisse\w* dehors\b|\bsleeping rough\b",
        r"\b(?:je|j)\b.{0,10}\b(?:traine|erre|reste|marche)\b.{0,15}\b(?:dehors|dans la rue|dans les rues)\b"
        r".{0,20}\b(?:nuit|soir)\b",
        r"\bj ai quitte chez\b|\bje suis (?:en )?fugu\w*\b|\bi left my (?:house|home|family)\b"
        r"|\b(?:n ose|ose) (?:pas|plus) rentrer\b",
        r"\b(?:pas|plus) (?:rentre\w*|dormi a la maison|dormi chez moi) depuis\b|\bje (?:quitte|fuis) (?:la"
        r" maison|ma famille|chez moi|chez mon|chez ma)\b",
        r"^(?!.*\b(?:tents?|camp\w*|scouts?|tente|colonie|pique nique|excursion)\b).*\b(?:je|j)\b.{0,1"
        r"0}\b(?:dors|"
        r"dormi|dormir|dormais|passe la nuit|passe mes nuits|passer la nuit)\b (?:\w+ ){0,2}(?:dans|sou"
        r"s|a|au|"
        r"sur|devant|derriere) (?:la |le |une |un |les |l )?(?:brousse|foret|gare|autogare|eglise|mosqu"
        r"ee|rue|"
        r"rues|boutique|kiosque|carcasse|maison abandonnee|pont|marche|carrefour|terminus|plage|banc|ch"
        r"antier|"
        r"table|hangar|belle etoile|dehors)\b",
        r"\bje (?:pars|m en vais|me tire|me casse)\b.{0,20}\b(?:de la maison|de chez|pour toujours|et je"
        r" (?:ne )?reviens (?:pas|plus|jamais)|et je ne reviendrai)\b",
        r"\bi (?:m|am) (?:on the streets?|living rough|homeless)\b|\bi (?:have|ve) (?:not|n t) been hom"
        r"e (?:for"
        r"|since)\b|\bi (?:slept|sleep|am sleeping|m sleeping) (?:at|in|under|on) (?:a|the) (?:station|"
        r"market|"
        r"bridge|church|mosque|street|bus stop|park)\b",
        r"\bje suis (?:a la rue|dans la rue|sans abri|sans maison|sans logement|sdf)\b"
        # Fled from the police (a game, a chase) is not leaving home.
        r"|\bje (?:me suis|suis) (?:enfui\w*|sauve\w*|echappe\w*|evade\w*) de\b"
        r"(?! (?:la police|policiers|flics|zombies|monstres)\b)",
        r"^(?!.*\b(?:ecole|cours|classe|heures?|\d+ ?h|h\d*|demain matin|tot|examen)\b)"
        r".*\bje (?:veux|vais|voudrai"
        r"s|compte|"
        r"pense a) (?:partir|fuir|quitter|m en aller|me sauver|m enfuir)\b.{0,15}\b(?:la maison|chez mo"
        r"i|de chez"
        r"|ma famille|d ici|ce soir|cette nuit|pour toujours|loin)\b",
        r"\b(?:m a|m ont|on m a) (?:chasse\w*|renvoye\w*)\b(?! (?:de la classe|du cours|de classe|du te"
        r"rrain|de"
        r" l equipe|du groupe))",
        r"\b(?:pas|plus|jamais) (?:rentre\w*|dormi) (?:a la maison|chez moi|chez nous)\b(?! (?:hier soir|pour"
        r" (?:etudier|reviser)))",
        r"\bi (?:m|am|have been|ve been) (?:living|staying) (?:on the street|outside|at the station|at "
        r"the market"
        r")\b",
        r"^(?!.*\b(?:tents?|camp\w*|scouts?|tente|colonie|pique nique)\b).*"
        r"\b(?:je|j)\b.{0,15}\b(?:dormi|dors|dormir|passe\w* la nuit|passer la nuit|passe mes nuits)\b.{0,15}"
        r"\b(?:dehors|dans la rue|a la gare|au marche|sous (?:un|le) pont|dans la cour|a la belle etoile|"
        r"au terminus|a la plage|sur un banc|dans un chantier|dans une voiture|au carrefour|a l autogare)\b",
        r"^(?!.*\b(?:tents?|camp\w*|scouts?|picnic|tente|colonie)\b).*"
        r"\b(?:slept|sleeping|sleep|spent the night|spending the night|staying)\b.{0,15}\b(?:outside|on the"
        r" street|at the market|at the station|under a bridge|in the street|at the bus)\b",
        r"\bje (?:ne )?(?:rentrerai|reviendrai|retournerai) (?:plus|jamais)\b|\bje (?:ne )?(?:veux|vais|peux)"
        r" (?:plus|jamais) (?:rentrer|retourner|revenir) (?:a la maison|chez moi|la bas|dans cette maison)\b",
        r"\b(?:i m|i am|i will|i won t|i will never) (?:not )?(?:going )?(?:back|go back) (?:home|to my"
        r" family)\b|\bnot going back home\b",
        r"\bchasse\w* de (?:la maison|chez moi|chez nous|chez mon oncle|chez ma tante)\b|\bme chasse\w*\b",
        r"\bje (?:vis|vivre|habite|suis) (?:maintenant )?(?:dans la rue|a la rue)\b|\bje suis sdf\b",
        r"\b(?:j ai|on a) fugu\w*\b|\bma fugue\b|\b(?:m enfuir|me sauver|me barrer) de (?:la maison|chez"
        r" moi)\b",
        r"\bi (?:left|ran from|escaped from|fled) (?:home|my house|my family|the house)\b|\bi have nowhere to"
        r" (?:sleep|go|stay)\b|\bno place to (?:sleep|stay)\b|\b(?:kicked|thrown|threw|chased) me out\b",
    ),
    "child_labour": (
        r"\b(?:ne )?(?:pars|part|vais|va|vas) plus (?:a l ecole|en classe|au college|au lycee)\b"
        r"|\b(?:j ai|on m a fait) (?:abandonne|quitte|arrete) (?:l ecole|les cours|les etudes|mes etudes)\b",
        r"\b(?:travaill?\w*|vends?|vend)\b.{0,30}\bpour (?:payer|nourrir|aider) (?:mon ecole|ma scolarite|ma"
        r" famille|mes freres|la famille|mes parents)\b|\b(?:peut|peuvent) (?:plus|pas) payer (?:mon |m"
        r"a |l )?"
        r"(?:ecole|scolarite)\b",
        r"\b(?:envoye\w*|amene\w*|emmene\w*)\b.{0,40}\bpour (?:travailler|vendre|faire le menage|etre bonne"
        r"|garder les enfants)\b|\bje (?:\w+ ){0,2}(?:recolte|ramasse|cueille|casse) (?:le |du |les )?("
        r"?:cacao"
        r"|cafe|coton|anacarde|cabosses)\b",
        r"\bdropped out of school\b|\bi (?:left|quit|stopped) school\b|\b(?:makes?|made|forces?|forced) me"
        r" (?:sell|carry|beg|clean|work|fetch)\b",
        r"\b(?:je fais|fais) (?:le menage|la vaisselle|la lessive)\b.{0,20}\bchez (?:une|un|des|la|le)\b"
        r"|\bje suis (?:devenu |devenue )?apprentie?\b|\b(?:ma patronne|mon patron)\b(?!.{0,20}\bde stage\b)",
        r"\bje (?:travaill?\w*|bosse|vends?|vend|porte des|mendie|cultive)\b(?!.{0,40}\b(?:maths|lecons?|"
        r"devoirs?|exercices?|revision|exposes?|examen|francais|anglais|physique|cours|svt|histoire)\b)"
        r".{0,40}"
        r"\b(?:toute la journee|tous les jours|chaque jour)\b",
        r"\bau lieu (?:d etudier|de (?:faire mes devoirs|reviser|etudier))\b|\bm (?:a|ont) pas (?:re)?inscrit"
        r"\w*\b|\b(?:house ?girl|house ?help|houseboy)\b|\bi (?:have to|must) work\b(?! (?:on|harder|hard|"
        r"more|at my))",
        r"\b(?:je|j)\b.{0,10}\b(?:vends?|vend|travaill?\w*|bosse|porte|pousse)\b.{0,40}\bpour (?:ma|mon) "
        r"(?:tante|tantie|oncle|tutrice|tuteur|patron|patronne|maratre)\b",
        r"\b(?:pas|plus) (?:le temps|le droit) d aller a l ecole\b|\b(?:dit|disent|veut|veulent|refus"
        r"e\w*)\b.{0,30}"
        r"\b(?:plus|pas) (?:d ecole|aller a l ecole|etudier|d etudes)\b",
        r"\bje (?:ne vais|vais) plus a l ecole\b|\b(?:domestique|bonne|servante|aide menagere) (?:chez|pour)"
        r" (?:une|un|des|la|le)\b",
        r"\bi (?:do not|don t|no longer|can not|can t|cannot) (?:go|attend) (?:to )?school (?:anymore|a"
        r"ny more"
        r"|because)\b",
        r"\bje (?:travaill?\w*|bosse|suis)\b.{0,20}\bmines?\b",
        r"\bje (?:travaille|bosse|vends?|vend|porte des|mendie|lave|cultive)\b(?!.{0,40}\b(?:maths|lecons?|"
        r"devoirs?|exercices?|revision|exposes?|examen|francais|anglais|physique|cours|svt|histoire)\b)"
        r".{0,40}\b(?:au lieu d aller|au lieu de|plutot que d aller|du matin au soir|jusqu a minuit|"
        r"jusqu a \d+ ?h|toute la nuit|sans etre paye\w*|sans salaire|depuis \d+ (?:mois|ans))\b",
        r"\bje (?:travaille|bosse|suis)\b.{0,20}\b(?:mine d or|mines|carriere|orpaillage|plantation|cacao|"
        r"cacaoyere|chantier)\b",
        r"\b(?:ne (?:vais|peux|irai|pourrai) (?:plus|jamais)|peux plus|vais plus|irai plus) (?:aller |"
        r"retourner )?(?:a l ecole|en classe|au college|au lycee)\b",
        rf"\b{_ADULT_AT_HOME}\b.{{0,30}}\b(?:retire\w*|sorti\w*|enleve\w*|arrete\w*)\b.{{0,15}}\b(?:ecole|"
        r"scolarite|etudes|college|classe)\b",
        r"\b(?:ne (?:paie|paye|paient|payent) (?:plus|pas)|ne veut plus payer|refuse de payer|pas d argent"
        r" pour) (?:mon |ma |mes |l )?(?:ecole|scolarite|frais de scolarite|ecolage|inscription)\b",
        r"\bje suis (?:aide menagere|fille de menage|talibe|porteuse|porteur|cireur|apprentie? \w+ au l"
        r"ieu)\b",
        r"\b(?:me fait|me font|m envoie|m envoient|m oblige\w* a|je dois|on me force a) mendi\w*\b",
        r"\b(?:i|we) (?:work|sell|carry|beg)\b.{0,40}\b(?:instead of (?:going to )?school|until midnight|"
        r"and (?:do not|don t|can not) go to school|no school)\b|\b(?:cocoa (?:farm|plantation)|gold mine)\b",
        r"\b(?:stopped|stop) (?:going to )?school (?:to|because)\b|\bnot (?:allowed|able) to go to school\b",
    ),
}

# Still more of each category as pupils type it at the worst moment: slang verbs (« me foutre en l'air
# », « me gérer »), an age beside the work or the marriage, a goodbye, SMS spellings the folding leaves
# (« me jete », « nul part »). Each needs the child speaking of themselves.
_AGE = r"(?:j ai|je n ai que|alors que j ai) (?:[5-9]|1[0-5]) ans?"
_WORK = (r"(?:je travaille (?:au|a la|dans|comme|chez|sur)|patron\w*|mine|carriere|chantier|aux? champs?|"
         r"plantation|bonne|domestique|servante|apprentie?|mendi\w*|docker|porteu\w*|cireur|je vends?|"
         r"je porte)")
_RANK = r"(?:deuxieme|troisieme|quatrieme|2e|3e|4e|2eme|3eme|4eme)"
_STILL_MORE: dict[str, tuple[str, ...]] = {
    "self_harm": (
        r"\b(?:je|j) (?:vais|veux|voudrais|pense a|ai envie de) me (?:foutre en l air|flinguer|buter|"
        r"tirer une balle|jete|jette|noye)\b|\bme donner la mort\b|\bunalive\w*\b",
        r"\b(?:je|j) (?:ne )?serai (?:plus|jamais plus) (?:la|en vie|parmi vous)\b|\badieu (?:tout le monde|"
        r"a tous|pour toujours|la famille|maman|papa)\b|\bpour ne (?:plus|jamais|plus jamais) (?:me|se) "
        r"reveiller\b",
        r"\bje me (?:griffe|gratte|mords|pince|cogne|frappe|brule|coupe)\w*\b.{0,30}\bjusqu (?:a|au) "
        r"(?:saigner|sang)\b|\blames?\b.{0,30}\b(?:salle de bain|toilettes|me couper|me taillader)\b",
        r"\b(?:took|take|taking|swallowed) (?:all|a lot of|lots of|too many|many|a bunch of)\b.{0,20}\b"
        r"(?:pills|tablets)\b|\b(?:plus|pas) (?:la force|le courage) de (?:vivre|continuer a vivre|rester en"
        r" vie)\b|\bfatigue\w* de respirer\b",
    ),
    "sexual_abuse": (
        r"\b(?:veut|veulent|voulait) me gerer\b|\b(?:notes?|moyenne|points?)\b.{0,30}\bsi (?:je|j) (?:passe|"
        r"viens|vais|reste) (?:chez lui|le soir|dans son bureau)\b",
    ),
    "abuse_home": (
        r"\b(?:verse|jete|lance)\w* de l eau (?:bouillante|chaude)\b|\bpoured (?:boiling|hot) water on me\b",
    ),
    "threats": (
        r"(?:\b(?:allait|allaient) me (?:tuer|frapper|planter|egorger|bruler|tabasser|retrouver)\b"
        r"|\bmenace\w* de (?:me|m) (?:kidnapp\w*|enlever|frapper|battre|bruler|violer|poignarder|planter|"
        rf"egorger|tabasser|casser)\b|\b(?:they|he|she) (?:will|ll) find me\b){_NOT_JOKING}",
    ),
    "forced_marriage": (
        r"\b(?:trop (?:jeune|petite?)|pas l age) (?:pour|de) (?:me marier|un mari|avoir un mari|le mariage|"
        r"etre mariee|etre epouse)\b|\btoo young (?:to (?:get )?marr\w*|for (?:a husband|marriage))\b",
        rf"\bje (?:vais|dois|serai|suis|deviens|veux pas) (?:etre |devenir )?(?:la |sa )?{_RANK} (?:femme|"
        rf"epouse)\b|\bme (?:donner|prendre) comme {_RANK} (?:femme|epouse)\b|\b(?:me|i)\b.{{0,20}}\b(?:be|"
        r"become|as) (?:his |the |a )?(?:second|third|fourth) wife\b",
        r"\b(?:dot|colas) pour (?:moi|mon mariage)\b|\bm (?:a|ont) promise a (?:un|une|son|mon|le|l)\b"
        r"|\b(?:dowry|bride price) for me\b|\bpromised (?:me )?to (?:an?|his|my)\b",
        r"\b(?:getting|get) married\b.{0,40}\bi (?:m|am) (?:1[0-6]|[8-9])\b|\bi (?:m|am) (?:1[0-6]|[8-9])\b"
        r".{0,40}\b(?:getting|get) married\b",
    ),
    "school_violence": (
        r"\b(?:nous|me) (?:fait|font) (?:porter|courir|rester|mettre)\b.{0,40}\b(?:comme punition|jusqu a "
        r"tomber|briques|parpaings|genoux sur)\b",
    ),
    "bullying": (
        r"\b(?:rit|rigole|rigolent) (?:tous |tout le temps |toujours )?de moi\b|\b(?:mensonges|rumeurs|"
        r"insultes|saletes) sur moi\b|\bmontages? (?:avec|de) (?:mes|ma)\b|\bexclu\w* de (?:tous |tout )?"
        r"(?:les |le )?groupes?\b",
    ),
    "runaway": (
        r"\b(?:dans|a) la rue depuis\b|\b(?:live|living|lives) (?:in|on) the streets?\b|\bsleeping rough\b"
        r"|\bnul part ou (?:aller|dormir)\b",
        r"\bje (?:ne )?(?:rentre|rentrerai|retournerai|peux) (?:plus|jamais) (?:rentrer |retourner )?(?:a la"
        r" maison|chez moi|chez nous|chez mon \w+|chez ma \w+)\b|\b(?:m a|m ont|me) dit\w* de ne (?:plus|"
        r"jamais) (?:revenir|rentrer|remettre)\b",
        r"\b(?:can t|cannot|can not) go (?:back )?home\b|\bleave home (?:tonight|forever|and never)\b"
        r"|\bi (?:left|ran away from) home\b|\bnever (?:coming|going) back home\b",
        r"\bje dors chez (?:des inconnus|un inconnu|une inconnue|des amis differents|n importe qui)\b|\bje "
        r"(?:dors|dormais) (?:\w+ ){0,3}(?:abandonne\w*|hangars?|terminus|kiosque)\b",
        r"\b(?:vais|veux|voudrais|pense a) (?:fuir|fuguer|m enfuir|me sauver)\b|\b(?:vais|veux|voudrais) "
        r"(?:quitter|partir de) (?:la maison|chez moi)\b(?!.{0,20}\b(?:tot|heures?|h|matin|pour l ecole|"
        r"examen)\b)",
    ),
    "child_labour": (
        rf"\b{_AGE}\b.{{0,60}}\b{_WORK}\b|\b{_WORK}\b.{{0,60}}\b{_AGE}\b",
        r"\bi (?:am|m) (?:[5-9]|1[0-5])\b.{0,40}\b(?:work (?:in|at|on) (?:a|the)|my boss|as a maid)\b"
        r"|\b(?:work (?:in|at|on) (?:a|the)|my boss|as a maid)\b.{0,50}\bi (?:am|m) (?:[5-9]|1[0-5])\b",
        r"\b(?:pas|plus) (?:d ecole|de cours|de classe|les cahiers) pour moi\b|\b(?:je n ai pas|j ai pas) "
        r"(?:fait|pu faire) la rentree\b|\bje suis (?:talibe|docker|vendeuse|porteuse)\b",
        r"\b(?:m a|m ont|ma) (?:mis|mise|place\w*|envoye\w*) (?:apprentie?|comme|chez un patron|au travail|"
        r"travailler)\b|\bno more school\b|\bnot (?:going|been) to school (?:this year|anymore|since)\b",
    ),
}
MORE = {category: (*found, *_STILL_MORE.get(category, ())) for category, found in MORE.items()}
